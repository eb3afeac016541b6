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
#include "unit/collectives/support/thread_channel.hpp"
#include "unit/collectives/support/thread_ranks.hpp"
#include "unit/collectives/support/values.hpp"

namespace tutti::collectives {
namespace {

using testing::Rank;

struct Layout {
  std::vector<size_t> counts;  // elements of each tensor, in order
  size_t segment_bytes;
};

std::vector<Layout> layouts(int size) {
  std::vector<size_t> many(40, 13);
  many[7] = 0;
  return {
      {{0}, 64},
      {{1}, 64},
      {{static_cast<size_t>(size - 1), 0, 1}, 64},
      {{3, 0, 5, 1, 7}, 8},                // segments of one element or two: a piece per element
      {many, 64},                          // segments within a tensor and across its end
      {many, 4096},                        // one segment spans many tensors
      {{1000, 3, 20001, 1, 0, 77}, 1000},  // segments not a whole number of 8-byte elements
  };
}

// The tensors of `layout` for `rank`: each its own allocation, holding input_value of its
// elements' positions in the logical vector.
std::vector<std::vector<std::byte>> make_tensors(const Layout& layout, DataType type, ReduceOp op,
                                                 int rank) {
  std::vector<std::vector<std::byte>> tensors;
  size_t at = 0;
  for (size_t count : layout.counts) {
    tensors.push_back(testing::make_buffer(
        type, count, [&](size_t i) { return testing::input_value(op, rank, at + i); }));
    at += count;
  }
  return tensors;
}

// Runs every layout x op x placement; `packs` says which ranks' channels refuse pieces. Throws
// the first failure of this rank (run_ranks then aborts the others, which would otherwise wait
// for it in the next call).
void check_ring_segments(Rank& rank, DataType type, const std::vector<bool>& packs) {
  const bool refuses = packs[static_cast<size_t>(rank.rank)];
  if (refuses)
    for (int peer = 0; peer < rank.size; ++peer)
      if (peer != rank.rank)
        dynamic_cast<testing::ThreadChannel&>(rank.transport.channel(peer)).refuse_pieces();
  std::vector<std::byte> pack;
  for (const Layout& layout : layouts(rank.size)) {
    for (ReduceOp op : testing::kAllOps) {
      for (bool in_place : {true, false}) {
        auto sends = make_tensors(layout, type, op, rank.rank);
        const auto originals = sends;
        std::vector<std::vector<std::byte>> recvs;
        std::vector<Segment> segments;
        for (auto& t : sends) {
          recvs.emplace_back(in_place ? 0 : t.size(), std::byte{0xee});
          void* out = in_place ? t.data() : recvs.back().data();
          segments.push_back({t.data(), out, t.size() / element_size(type)});
        }
        Context ctx = rank.context(layout.segment_bytes);
        const SegmentsRun run = allreduce_segments(ctx, Algorithm::kRing, segments, type, op, pack);
        size_t total = 0;
        for (size_t c : layout.counts) total += c;
        const std::string label = fmt::format(
            "ring allreduce_segments, rank {} of {}{}, {} {}, {} tensors of {} elements, segment "
            "{} B, {}",
            rank.rank, rank.size, refuses ? " (packing)" : "", to_string(type), to_string(op),
            layout.counts.size(), total, layout.segment_bytes,
            in_place ? "in place" : "out of place");
        // Ranks whose channels take no pieces pack; alone, each tensor is its own result; no
        // data at all takes the packed path's empty call (it still meets the peers).
        const bool should_pack = total == 0 || (refuses && rank.size > 1);
        if (run.packed != should_pack)
          throw std::runtime_error(
              fmt::format("{}: packed {}, expected {}", label, run.packed, should_pack));
        size_t at = 0;
        for (size_t t = 0; t < segments.size(); ++t) {
          const size_t base = at;
          auto error = testing::check_buffer(
              type, op, segments[t].recv, segments[t].count,
              [&](size_t i) { return testing::expected_value(type, op, rank.size, base + i); },
              fmt::format("{}, tensor {}", label, t));
          if (!error.empty()) throw std::runtime_error(error);
          at += segments[t].count;
        }
        if (!in_place && sends != originals)
          throw std::runtime_error(label + ": a send tensor was modified");
      }
    }
  }
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
      std::vector<float> a(37, float(rank.rank + 1)), b(0), c(1000, 1.0f);
      std::vector<Segment> segments{
          {a.data(), a.data(), a.size()}, {b.data(), b.data(), 0}, {c.data(), c.data(), c.size()}};
      std::vector<std::byte> pack;
      Context ctx = rank.context(256);
      ctx.prescale = 0.5;
      ctx.postscale = 4.0;
      const SegmentsRun run = allreduce_segments(ctx, Algorithm::kRing, segments,
                                                 DataType::kFloat32, ReduceOp::kSum, pack);
      const float rank_sum = static_cast<float>(size * (size + 1) / 2);
      std::string& error = errors[static_cast<size_t>(rank.rank)];
      if (run.packed) error = "packed although every channel takes pieces";
      for (float v : a)
        if (v != rank_sum * 2.0f) error = fmt::format("a: {} != {}", v, rank_sum * 2.0f);
      for (float v : c)
        if (v != static_cast<float>(size) * 2.0f) error = fmt::format("c: {}", v);
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
