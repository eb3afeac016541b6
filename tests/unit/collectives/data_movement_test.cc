// allgather, reduce_scatter, broadcast (every root) and barrier for every world size x data type,
// looping inside each world over counts and placements. Runs over the in-process test double
// (support/thread_channel.hpp); tcp/shm are covered in tests/integration.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <tuple>

#include "collectives/collectives.hpp"
#include "unit/collectives/support/thread_ranks.hpp"
#include "unit/collectives/support/values.hpp"

namespace tutti::collectives {
namespace {

using testing::Rank;

constexpr auto& kTypes = testing::kAllTypes;
constexpr auto& kOps = testing::kAllOps;

struct Case {
  size_t count;
  size_t segment_bytes;
};

std::vector<Case> cases_for(int size) {
  return {{0, 64}, {1, 64}, {static_cast<size_t>(size - 1), 64}, {1000, 64}, {4099, 1000}};
}

// Distinct per rank and position, and exact in every type (integers below 101).
double rank_value(int rank, size_t index) {
  return static_cast<double>((static_cast<size_t>(rank) * 31 + index * 7) % 101);
}

using WorldParam = std::tuple<int, DataType>;

std::string param_name(const ::testing::TestParamInfo<WorldParam>& info) {
  return fmt::format("np{}_{}", std::get<0>(info.param), to_string(std::get<1>(info.param)));
}

// Runs body on every rank and expects no exception and no reported error.
void run_checked(int size, const std::function<std::string(Rank&)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(size));
  auto failures = testing::run_ranks(
      size, [&](Rank& rank) { errors[static_cast<size_t>(rank.rank)] = body(rank); });
  EXPECT_EQ(testing::describe_failures(failures), "");
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

class DataMovementTest : public ::testing::TestWithParam<WorldParam> {};

TEST_P(DataMovementTest, AllgatherConcatenatesInRankOrder) {
  const auto [size, type] = GetParam();
  run_checked(size, [size = size, type = type](Rank& rank) -> std::string {
    for (const Case& c : cases_for(size)) {
      for (bool in_place : {false, true}) {
        auto send =
            testing::make_buffer(type, c.count, [&](size_t i) { return rank_value(rank.rank, i); });
        std::vector<std::byte> recv(send.size() * static_cast<size_t>(size), std::byte{0xee});
        const void* source = send.data();
        if (in_place) {
          std::copy(send.begin(), send.end(),
                    recv.begin() + static_cast<ptrdiff_t>(rank.rank * send.size()));
          source = recv.data() + rank.rank * send.size();
        }
        Context ctx = rank.context(c.segment_bytes);
        allgather(ctx, source, recv.data(), c.count, type);
        auto error = testing::check_buffer(
            type, ReduceOp::kSum, recv.data(), c.count * static_cast<size_t>(size),
            [&](size_t i) { return rank_value(static_cast<int>(i / c.count), i % c.count); },
            fmt::format("allgather, rank {} of {}, {}, count {}, {}", rank.rank, size,
                        to_string(type), c.count, in_place ? "in place" : "out of place"));
        if (!error.empty()) return error;
      }
    }
    return {};
  });
}

TEST_P(DataMovementTest, ReduceScatterGivesEachRankItsReducedBlock) {
  const auto [size, type] = GetParam();
  run_checked(size, [size = size, type = type](Rank& rank) -> std::string {
    for (const Case& c : cases_for(size)) {
      for (ReduceOp op : kOps) {
        for (bool in_place : {false, true}) {
          const size_t total = c.count * static_cast<size_t>(size);
          auto send = testing::make_buffer(
              type, total, [&](size_t i) { return testing::input_value(op, rank.rank, i); });
          const auto original = send;
          std::vector<std::byte> recv(c.count * element_size(type), std::byte{0xee});
          void* out = in_place ? send.data() + rank.rank * recv.size() : recv.data();
          Context ctx = rank.context(c.segment_bytes);
          reduce_scatter(ctx, send.data(), out, c.count, type, op);
          const size_t first = static_cast<size_t>(rank.rank) * c.count;
          const std::string label = fmt::format(
              "reduce_scatter, rank {} of {}, {} {}, count {}, {}", rank.rank, size,
              to_string(type), to_string(op), c.count, in_place ? "in place" : "out of place");
          auto error = testing::check_buffer(
              type, op, out, c.count,
              [&](size_t i) { return testing::expected_value(type, op, size, first + i); }, label);
          if (!error.empty()) return error;
          if (!in_place && send != original) return label + ": the send buffer was modified";
        }
      }
    }
    return {};
  });
}

TEST_P(DataMovementTest, BroadcastFromEveryRoot) {
  const auto [size, type] = GetParam();
  run_checked(size, [size = size, type = type](Rank& rank) -> std::string {
    auto cases = cases_for(size);
    cases.push_back({70000, 4096});  // more than 64 KiB in every type: the pipelined chain
    for (const Case& c : cases) {
      for (int root = 0; root < size; ++root) {
        auto buf = testing::make_buffer(type, c.count, [&](size_t i) {
          return rank.rank == root ? rank_value(root, i) : rank_value(root + 1, i);
        });
        Context ctx = rank.context(c.segment_bytes);
        broadcast(ctx, buf.data(), c.count, type, root);
        auto error = testing::check_buffer(
            type, ReduceOp::kSum, buf.data(), c.count,
            [&](size_t i) { return rank_value(root, i); },
            fmt::format("broadcast from root {}, rank {} of {}, {}, count {}", root, rank.rank,
                        size, to_string(type), c.count));
        if (!error.empty()) return error;
      }
    }
    return {};
  });
}

INSTANTIATE_TEST_SUITE_P(EveryWorld, DataMovementTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 7, 8),
                                            ::testing::ValuesIn(kTypes)),
                         param_name);

class BarrierTest : public ::testing::TestWithParam<int> {};

// No rank may leave barrier k before every rank has arrived at it.
TEST_P(BarrierTest, NoRankLeavesBeforeAllArrive) {
  const int size = GetParam();
  constexpr int kRounds = 50;
  std::vector<std::atomic<int>> arrived(kRounds);
  run_checked(size, [&](Rank& rank) -> std::string {
    for (int round = 0; round < kRounds; ++round) {
      arrived[static_cast<size_t>(round)].fetch_add(1);
      Context ctx = rank.context();
      barrier(ctx);
      const int seen = arrived[static_cast<size_t>(round)].load();
      if (seen != size) {
        return fmt::format("rank {} left barrier {} when only {} of {} ranks had arrived",
                           rank.rank, round, seen, size);
      }
    }
    return {};
  });
}

INSTANTIATE_TEST_SUITE_P(EveryWorld, BarrierTest, ::testing::Values(1, 2, 3, 4, 5, 7, 8),
                         [](const auto& info) { return fmt::format("np{}", info.param); });

}  // namespace
}  // namespace tutti::collectives
