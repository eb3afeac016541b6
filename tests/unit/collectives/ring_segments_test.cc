// The fused allreduce on the ring without packing (allreduce_segments with kRing over channels
// that take pieces): segments leave from and arrive into the tensors themselves. Every world size
// 1..8, every dtype and op, in place and out of place, over layouts with empty tensors, single
// elements, odd counts, and pipeline segments both far smaller than a tensor and spanning many
// tensors (segment sizes that are not a whole number of elements too). And worlds where some
// ranks' channels take no pieces: those pack, and every rank still gets the exact result.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>
#include <vector>

#include "collectives/collectives.hpp"
#include "unit/collectives/support/aliased_segments.hpp"
#include "unit/collectives/support/segment_cases.hpp"
#include "unit/collectives/support/thread_ranks.hpp"
#include "unit/collectives/support/values.hpp"

namespace tutti::collectives {
namespace {

using testing::Rank;

// Every case with the ring; `packs` says which ranks' channels refuse pieces. Throws the first
// failure of this rank (run_ranks then aborts the others, which would otherwise wait for it in
// the next call).
void check_ring_segments(Rank& rank, DataType type, const std::vector<bool>& packs) {
  const bool refuses = packs[static_cast<size_t>(rank.rank)];
  if (refuses) testing::refuse_pieces(rank.transport, rank.rank, rank.size);
  // Ranks whose channels take no pieces pack; alone, each tensor is its own result; no data at
  // all takes the packed path's empty call (it still meets the peers).
  testing::check_segment_cases(
      [&](size_t segment_bytes) { return rank.context(segment_bytes); }, rank.rank, rank.size, type,
      Algorithm::kRing, [&](size_t total) { return total == 0 || (refuses && rank.size > 1); },
      refuses ? " (packing)" : "");
}

class RingSegmentsTest : public ::testing::TestWithParam<std::tuple<int, DataType>> {};

TEST_P(RingSegmentsTest, EveryRankGetsTheExactReduction) {
  const auto [size, type] = GetParam();
  // All take pieces; then every other rank packs (the messages must be the same either way).
  for (bool mixed : {false, true}) {
    std::vector<bool> packs(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) packs[static_cast<size_t>(r)] = mixed && r % 2 == 1;
    auto failures = testing::run_ranks(
        size, [&, type = type](Rank& rank) { check_ring_segments(rank, type, packs); });
    EXPECT_EQ(testing::describe_failures(failures), "") << (mixed ? "odd ranks pack" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryWorld, RingSegmentsTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 6, 7, 8),
                                            ::testing::ValuesIn(testing::kAllTypes)),
                         [](const auto& info) {
                           return fmt::format("np{}_{}", std::get<0>(info.param),
                                              to_string(std::get<1>(info.param)));
                         });

// prescale and postscale (the engine's gradient averaging) through the pieces: the result is
// sum * prescale * postscale, on every rank, with the partial sums of 3+ ranks in the tensors.
TEST(RingSegments, ScalesWhereItReduces) {
  for (int size : {2, 3, 5}) {
    std::vector<std::string> errors(static_cast<size_t>(size));
    auto failures = testing::run_ranks(size, [&](Rank& rank) {
      errors[static_cast<size_t>(rank.rank)] =
          testing::check_scaled_segments(rank.context(256), Algorithm::kRing, rank.rank, size);
    });
    EXPECT_EQ(testing::describe_failures(failures), "");
    for (const auto& e : errors) EXPECT_EQ(e, "") << size << " ranks";
  }
}

// Tensors that share memory cannot be reduced where they are (results would overwrite inputs
// still to be read): the batch is packed, and each tensor gets its own input's sum. Counts that
// span several segments and, at 2 ranks, several slabs.
TEST(RingSegments, TensorsThatShareMemoryGetTheirOwnSums) {
  for (int size : {1, 2, 3, 5}) {
    auto failures = testing::run_ranks(size, [&](Rank& rank) {
      testing::check_aliased_segments([&] { return rank.context(256); }, rank.rank, rank.size,
                                      Algorithm::kRing, 1000);
    });
    EXPECT_EQ(testing::describe_failures(failures), "") << size << " ranks";
  }
}

}  // namespace
}  // namespace tutti::collectives
