// The fused allreduce on the hierarchical algorithm without packing (allreduce_segments with
// kHierarchical where every on-host channel takes pieces): each host's reduce and broadcast read
// and write the tensors themselves, and the leaders' allreduce takes the tensors again (the ring
// in place). Placements with even and uneven ranks per host, one host, one rank per host; every
// dtype and op, in place and out of place, layouts with empty tensors, single elements, odd
// counts, and pipeline segments within a tensor and across many. Then the same where some ranks'
// channels take no pieces: those pack, and every rank still gets the exact result.
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

struct Placement {
  const char* name;
  std::vector<int> hosts;  // host index of each rank
};

const Placement kPlacements[] = {
    {"one_host_2", {0, 0}},
    {"two_hosts_1x1", {0, 1}},
    {"two_hosts_2x2", {0, 0, 1, 1}},
    {"two_hosts_1_3", {0, 1, 1, 1}},
    {"interleaved_2x2", {0, 1, 0, 1}},
    {"three_hosts_2_2_3", {0, 0, 1, 1, 2, 2, 2}},
    {"four_hosts_8", {0, 1, 1, 2, 2, 2, 3, 3}},
};

// Whether `rank` has another rank on its host.
bool shares_host(const std::vector<int>& hosts, int rank) {
  for (size_t r = 0; r < hosts.size(); ++r)
    if (static_cast<int>(r) != rank && hosts[r] == hosts[static_cast<size_t>(rank)]) return true;
  return false;
}

// Runs every layout x op on this rank; `packs` says which ranks' channels refuse pieces. Throws
// this rank's first failure (run_ranks then aborts the others).
void check_hier_segments(Rank& rank, const std::vector<int>& hosts, DataType type,
                         const std::vector<bool>& packs) {
  const bool refuses = packs[static_cast<size_t>(rank.rank)];
  if (refuses) testing::refuse_pieces(rank.transport, rank.rank, rank.size);
  // A rank packs where one of its host's channels takes no pieces (a rank alone on its host hands
  // its tensors to the leaders' allreduce, which packs there if it must), and for no data at all
  // (the packed path's empty call still meets the peers).
  testing::check_segment_cases(
      [&](size_t segment_bytes) {
        Context ctx = rank.context(segment_bytes);
        ctx.host_of_rank = hosts;
        return ctx;
      },
      rank.rank, rank.size, type, Algorithm::kHierarchical,
      [&](size_t total) { return total == 0 || (refuses && shares_host(hosts, rank.rank)); },
      refuses ? " (refusing pieces)" : "");
}

class HierSegmentsTest : public ::testing::TestWithParam<std::tuple<size_t, DataType>> {};

TEST_P(HierSegmentsTest, EveryRankGetsTheExactReduction) {
  const auto [index, type] = GetParam();
  const Placement& placement = kPlacements[index];
  const int size = static_cast<int>(placement.hosts.size());
  // All take pieces; then every other rank packs (the messages must be the same either way).
  for (bool mixed : {false, true}) {
    std::vector<bool> packs(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) packs[static_cast<size_t>(r)] = mixed && r % 2 == 1;
    auto failures = testing::run_ranks(size, [&, type = type](Rank& rank) {
      check_hier_segments(rank, placement.hosts, type, packs);
    });
    EXPECT_EQ(testing::describe_failures(failures), "") << (mixed ? "odd ranks pack" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPlacement, HierSegmentsTest,
                         ::testing::Combine(::testing::Range(size_t{0}, std::size(kPlacements)),
                                            ::testing::ValuesIn(testing::kAllTypes)),
                         [](const auto& info) {
                           return fmt::format("{}_{}", kPlacements[std::get<0>(info.param)].name,
                                              to_string(std::get<1>(info.param)));
                         });

// prescale and postscale (the engine's gradient averaging) through the pieces: sum * prescale *
// postscale on every rank, whether a rank's host has others (the chain scales) or not.
TEST(HierSegments, ScalesWhereItReduces) {
  for (const std::vector<int>& hosts :
       {std::vector<int>{0, 0, 1}, std::vector<int>{0, 0, 0, 1, 1}, std::vector<int>{0, 0}}) {
    const int size = static_cast<int>(hosts.size());
    std::vector<std::string> errors(hosts.size());
    auto failures = testing::run_ranks(size, [&](Rank& rank) {
      Context ctx = rank.context(256);
      ctx.host_of_rank = hosts;
      errors[static_cast<size_t>(rank.rank)] =
          testing::check_scaled_segments(ctx, Algorithm::kHierarchical, rank.rank, size);
    });
    EXPECT_EQ(testing::describe_failures(failures), "");
    for (const auto& e : errors) EXPECT_EQ(e, "") << size << " ranks";
  }
}

// Tensors that share memory are packed (read whole before anything is written): each gets its
// own input's sum, over several segments, on hosts of one and several ranks.
TEST(HierSegments, TensorsThatShareMemoryGetTheirOwnSums) {
  for (const std::vector<int>& hosts : {std::vector<int>{0, 0, 1}, std::vector<int>{0, 1, 1, 1}}) {
    const int size = static_cast<int>(hosts.size());
    auto failures = testing::run_ranks(size, [&](Rank& rank) {
      testing::check_aliased_segments(
          [&] {
            Context ctx = rank.context(256);
            ctx.host_of_rank = hosts;
            return ctx;
          },
          rank.rank, rank.size, Algorithm::kHierarchical, 1000);
    });
    EXPECT_EQ(testing::describe_failures(failures), "") << size << " ranks";
  }
}

}  // namespace
}  // namespace tutti::collectives
