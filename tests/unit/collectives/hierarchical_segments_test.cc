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
#include "unit/collectives/support/thread_channel.hpp"
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
  if (refuses)
    for (int peer = 0; peer < rank.size; ++peer)
      if (peer != rank.rank)
        dynamic_cast<testing::ThreadChannel&>(rank.transport.channel(peer)).refuse_pieces();
  std::vector<std::byte> pack;
  for (const Layout& layout : layouts(rank.size)) {
    for (ReduceOp op : testing::kAllOps) {
      for (bool in_place : {true, false}) {
        std::vector<std::vector<std::byte>> sends;
        size_t total = 0;
        for (size_t count : layout.counts) {
          sends.push_back(testing::make_buffer(type, count, [&](size_t i) {
            return testing::input_value(op, rank.rank, total + i);
          }));
          total += count;
        }
        const auto originals = sends;
        std::vector<std::vector<std::byte>> recvs;
        std::vector<Segment> segments;
        for (auto& t : sends) {
          recvs.emplace_back(in_place ? 0 : t.size(), std::byte{0xee});
          void* out = in_place ? t.data() : recvs.back().data();
          segments.push_back({t.data(), out, t.size() / element_size(type)});
        }
        Context ctx = rank.context(layout.segment_bytes);
        ctx.host_of_rank = hosts;
        const SegmentsRun run =
            allreduce_segments(ctx, Algorithm::kHierarchical, segments, type, op, pack);
        const std::string label = fmt::format(
            "hier allreduce_segments, rank {} of {}{}, {} {}, {} tensors of {} elements, segment "
            "{} B, {}",
            rank.rank, rank.size, refuses ? " (refusing pieces)" : "", to_string(type),
            to_string(op), layout.counts.size(), total, layout.segment_bytes,
            in_place ? "in place" : "out of place");
        // A rank packs where one of its host's channels takes no pieces (a rank alone on its host
        // hands its tensors to the leaders' allreduce, which packs there if it must), and for no
        // data at all (the packed path's empty call still meets the peers).
        const bool should_pack = total == 0 || (refuses && shares_host(hosts, rank.rank));
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
      std::vector<float> a(37, float(rank.rank + 1)), b(0), c(1000, 1.0f);
      std::vector<Segment> segments{
          {a.data(), a.data(), a.size()}, {b.data(), b.data(), 0}, {c.data(), c.data(), c.size()}};
      std::vector<std::byte> pack;
      Context ctx = rank.context(256);
      ctx.host_of_rank = hosts;
      ctx.prescale = 0.5;
      ctx.postscale = 4.0;
      const SegmentsRun run = allreduce_segments(ctx, Algorithm::kHierarchical, segments,
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
