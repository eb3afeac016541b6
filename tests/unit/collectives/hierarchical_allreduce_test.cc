// The hierarchical allreduce over pretend hosts (host_of_rank) on the in-process test double:
// every placement (even and uneven ranks per host, one host, one rank per host) x every dtype x
// op x count {0, 1, odd, many segments}, in place and out of place, must give the exact result.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <tuple>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/hierarchy.hpp"
#include "core/error.hpp"
#include "unit/collectives/support/thread_ranks.hpp"
#include "unit/collectives/support/values.hpp"

namespace tutti::collectives {
namespace {

using testing::Rank;

constexpr auto& kTypes = testing::kAllTypes;
constexpr auto& kOps = testing::kAllOps;

struct Layout {
  const char* name;
  std::vector<int> hosts;  // host index of each rank
};

const Layout kLayouts[] = {
    {"one_rank", {0}},
    {"one_host_2", {0, 0}},
    {"two_hosts_1x1", {0, 1}},
    {"two_hosts_2x2", {0, 0, 1, 1}},
    {"two_hosts_3_1", {0, 0, 0, 1}},
    {"two_hosts_1_3", {0, 1, 1, 1}},
    {"interleaved_2x2", {0, 1, 0, 1}},
    {"three_hosts_2_2_3", {0, 0, 1, 1, 2, 2, 2}},
    {"three_hosts_1_each", {0, 1, 2}},
    {"one_host_5", {0, 0, 0, 0, 0}},
    {"four_hosts_8", {0, 1, 1, 2, 2, 2, 3, 3}},
};

struct Case {
  size_t count;
  size_t segment_bytes;
};

std::string check(Rank& rank, const std::vector<int>& hosts, DataType type) {
  const std::vector<Case> cases = {{0, 64}, {1, 64}, {4099, 1000}, {1000, 64}, {30001, 4096}};
  for (const Case& c : cases) {
    for (ReduceOp op : kOps) {
      for (bool in_place : {false, true}) {
        auto send = testing::make_buffer(
            type, c.count, [&](size_t i) { return testing::input_value(op, rank.rank, i); });
        const auto original = send;
        std::vector<std::byte> recv(in_place ? 0 : send.size(), std::byte{0xee});
        void* out = in_place ? send.data() : recv.data();
        Context ctx = rank.context(c.segment_bytes);
        ctx.host_of_rank = hosts;
        allreduce(ctx, Algorithm::kHierarchical, send.data(), out, c.count, type, op);
        const std::string label =
            fmt::format("hier allreduce, rank {} of {}, {} {}, count {}, segment {} B, {}",
                        rank.rank, rank.size, to_string(type), to_string(op), c.count,
                        c.segment_bytes, in_place ? "in place" : "out of place");
        auto error = testing::check_buffer(
            type, op, out, c.count,
            [&](size_t i) { return testing::expected_value(type, op, rank.size, i); }, label);
        if (!error.empty()) return error;
        if (!in_place && send != original) return label + ": the send buffer was modified";
      }
    }
  }
  return {};
}

class HierarchicalAllreduce : public ::testing::TestWithParam<std::tuple<size_t, DataType>> {};

TEST_P(HierarchicalAllreduce, MatchesExactReduction) {
  const auto [layout_index, type] = GetParam();
  const Layout& layout = kLayouts[layout_index];
  const int size = static_cast<int>(layout.hosts.size());
  std::vector<std::string> errors(static_cast<size_t>(size));
  auto failures = testing::run_ranks(size, [&, type = type](Rank& rank) {
    errors[static_cast<size_t>(rank.rank)] = check(rank, layout.hosts, type);
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(EveryPlacement, HierarchicalAllreduce,
                         ::testing::Combine(::testing::Range(size_t{0}, std::size(kLayouts)),
                                            ::testing::ValuesIn(kTypes)),
                         [](const auto& info) {
                           return fmt::format("{}_{}", kLayouts[std::get<0>(info.param)].name,
                                              to_string(std::get<1>(info.param)));
                         });

// Calls that alternate hier with the flat algorithms on one world: the phases' private sequence
// numbers must never collide with the next plain call's tags.
TEST(HierarchicalAllreduce, InterleavesWithFlatAlgorithms) {
  const std::vector<int> hosts = {0, 0, 1, 1, 1};
  std::vector<std::string> errors(hosts.size());
  auto failures = testing::run_ranks(5, [&](Rank& rank) {
    for (int round = 0; round < 6; ++round) {
      const Algorithm a = round % 2 ? Algorithm::kRing : Algorithm::kHierarchical;
      auto buf = testing::make_buffer(DataType::kInt32, 777, [&](size_t i) {
        return testing::input_value(ReduceOp::kSum, rank.rank, i);
      });
      Context ctx = rank.context(256);
      ctx.host_of_rank = hosts;
      allreduce(ctx, a, buf.data(), buf.data(), 777, DataType::kInt32, ReduceOp::kSum);
      auto error = testing::check_buffer(
          DataType::kInt32, ReduceOp::kSum, buf.data(), 777,
          [&](size_t i) { return testing::expected_value(DataType::kInt32, ReduceOp::kSum, 5, i); },
          fmt::format("round {} ({}) on rank {}", round, to_string(a), rank.rank));
      if (!error.empty()) errors[static_cast<size_t>(rank.rank)] = error;
    }
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST(HierarchicalAllreduce, WithoutPlacementIsAConfigErrorNamingTheAlternatives) {
  auto failures = testing::run_ranks(2, [&](Rank& rank) {
    std::vector<float> buf(4, 1.0f);
    Context ctx = rank.context();
    try {
      allreduce(ctx, Algorithm::kHierarchical, buf.data(), buf.data(), buf.size(),
                DataType::kFloat32, ReduceOp::kSum);
      ADD_FAILURE() << "no error on rank " << rank.rank;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig);
      EXPECT_NE(std::string(e.what()).find("TUTTI_ALGO=hier"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(rank.rank)), std::string::npos)
          << e.what();
    }
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

TEST(Hierarchy, LeadersAreTheLowestRankOfEachHostInHostOrder) {
  const std::vector<int> hosts = {0, 1, 0, 2, 1, 2, 2};
  Hierarchy h = hierarchy_of(hosts, 4);
  EXPECT_EQ(h.local, (std::vector<int>{1, 4}));
  EXPECT_EQ(h.local_index, 1);
  EXPECT_EQ(h.leaders, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(h.leader_index, -1);
  EXPECT_EQ(h.max_local, 3);
  EXPECT_FALSE(h.uniform);
  Hierarchy leader = hierarchy_of(hosts, 3);
  EXPECT_EQ(leader.leader_index, 2);
  EXPECT_EQ(leader.local_index, 0);
  EXPECT_TRUE(hierarchy_of(std::vector<int>{0, 0, 1, 1}, 0).uniform);
  EXPECT_THROW(hierarchy_of(hosts, 7), Error);
}

TEST(Hierarchy, PhaseSequencesAreDistinctAndNeverPlainSequences) {
  EXPECT_NE(phase_sequence(5, 0), phase_sequence(5, 1));
  EXPECT_NE(phase_sequence(5, 2), phase_sequence(6, 2));
  // Whatever the call number (the tag's sequence field wraps), a phase's tag is never a plain
  // call's tag, and both stay collective tags of no context.
  std::set<transport::Tag> plain, phases;
  for (uint64_t s : {uint64_t{1}, uint64_t{2}, uint64_t{1} << 15, (uint64_t{1} << 17) + 1,
                     uint64_t{1} << 30, (uint64_t{1} << 40) + 7}) {
    plain.insert(transport::make_tag(s, 3));
    for (unsigned p = 0; p < 4; ++p) phases.insert(transport::make_tag(phase_sequence(s, p), 3));
  }
  for (transport::Tag t : phases) {
    EXPECT_EQ(plain.count(t), 0u) << std::hex << t;
    EXPECT_EQ(transport::tag_class(t), transport::TagClass::kCollective);
    EXPECT_EQ(transport::tag_context(t), 0u);
  }
}

}  // namespace
}  // namespace tutti::collectives
