// The shared-memory allreduce on real one-host meshes (threads of this process, real /dev/shm
// window): every world size x data type, looping over every op, counts around the single-step
// limit and the chunk size, counts that wrap a small window many times, in place and out of
// place, and calls of mixed sizes back to back (slot reuse across calls).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <tuple>

#include "collectives/collectives.hpp"
#include "collectives/shm_plan.hpp"
#include "core/error.hpp"
#include "transport/local_window.hpp"
#include "unit/collectives/support/aliased_segments.hpp"
#include "unit/collectives/support/shm_world.hpp"
#include "unit/collectives/support/thread_ranks.hpp"
#include "unit/collectives/support/values.hpp"

namespace tutti::collectives {
namespace {

using testing::ShmRank;

constexpr DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                               DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                               DataType::kUInt8};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kAvg};
// The smallest window: three slots of about 21 KiB, so the larger counts reuse every slot often.
constexpr size_t kSmallWindow = 64 << 10;

std::string describe(const std::vector<std::exception_ptr>& failures) {
  return testing::describe_failures(failures);
}

// One allreduce on this rank, checked against the exact reduction; returns the first mismatch.
std::string check_one(ShmRank& rank, DataType type, ReduceOp op, size_t count, bool in_place) {
  auto send = testing::make_buffer(
      type, count, [&](size_t i) { return testing::input_value(op, rank.rank, i); });
  const auto original = send;
  std::vector<std::byte> recv(in_place ? 0 : send.size(), std::byte{0xee});
  void* out = in_place ? send.data() : recv.data();
  Context ctx = rank.context();
  allreduce(ctx, Algorithm::kShm, send.data(), out, count, type, op);
  const std::string label =
      fmt::format("shm allreduce, rank {} of {}, {} {}, count {}, {}", rank.rank, rank.size,
                  to_string(type), to_string(op), count, in_place ? "in place" : "out of place");
  auto error = testing::check_buffer(
      type, op, out, count,
      [&](size_t i) { return testing::expected_value(type, op, rank.size, i); }, label);
  if (!error.empty()) return error;
  if (!in_place && send != original) return label + ": the send buffer was modified";
  return {};
}

std::vector<size_t> counts_for(int size, DataType type) {
  const ShmPlan plan = plan_shm(kSmallWindow, size, element_size(type));
  const size_t single = plan.single_step_elements;
  return {0,
          1,
          static_cast<size_t>(size) - 1,
          7,
          single,
          single + 1,                                 // both sides of the single-step limit
          plan.chunk_elements + 3,                    // one full chunk and a ragged one
          plan.chunk_elements * plan.slots * 2 + 5};  // twice around the window
}

class ShmAllreduceTest : public ::testing::TestWithParam<std::tuple<int, DataType>> {};

TEST_P(ShmAllreduceTest, MatchesExactReduction) {
  const auto [size, type] = GetParam();
  std::vector<std::string> errors(static_cast<size_t>(size));
  auto failures = testing::run_shm_world(size, kSmallWindow, [&, type = type](ShmRank& rank) {
    ASSERT_NE(rank.transport.local_window(), nullptr);
    for (size_t count : counts_for(rank.size, type))
      for (ReduceOp op : kOps)
        for (bool in_place : {false, true}) {
          auto error = check_one(rank, type, op, count, in_place);
          if (!error.empty() && errors[rank.rank].empty()) errors[rank.rank] = error;
        }
  });
  EXPECT_EQ(describe(failures), "");
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(Worlds, ShmAllreduceTest,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 7, 8),
                                            ::testing::ValuesIn(kTypes)),
                         [](const auto& info) {
                           return fmt::format("np{}_{}", std::get<0>(info.param),
                                              to_string(std::get<1>(info.param)));
                         });

// Sizes alternate between the single-step and pipelined paths, counts end in different slots and
// element sizes change. Pipelined calls restart at slot 0 while single-step calls rotate, so a
// single-step call right after a pipelined one must wait for the readers of whatever chunk of it
// last used its slot.
TEST(ShmAllreduce, BackToBackCallsOfMixedSizesAndTypesReuseTheWindow) {
  constexpr DataType kMixed[] = {DataType::kFloat32, DataType::kUInt8, DataType::kFloat64,
                                 DataType::kFloat16};
  for (int size : {2, 3, 6}) {
    std::vector<std::string> errors(static_cast<size_t>(size));
    auto failures = testing::run_shm_world(size, kSmallWindow, [&](ShmRank& rank) {
      int call = 0;
      for (int round = 0; round < 3; ++round)
        for (size_t count : {5u, 100000u, 1000u, 3u, 7001u, 1900u, 40000u, 1u, 60001u, 1500u}) {
          DataType type = kMixed[call++ % std::size(kMixed)];
          if (auto e = check_one(rank, type, ReduceOp::kSum, count, round == 1);
              !e.empty() && errors[rank.rank].empty())
            errors[rank.rank] = e;
        }
    });
    EXPECT_EQ(describe(failures), "") << size;
    for (const auto& e : errors) EXPECT_EQ(e, "") << size;
  }
}

// The default window (4 MiB per rank) with a message larger than it.
TEST(ShmAllreduce, MessageLargerThanTheDefaultWindow) {
  std::vector<std::string> errors(2);
  auto failures = testing::run_shm_world(2, 4 << 20, [&](ShmRank& rank) {
    errors[rank.rank] =
        check_one(rank, DataType::kFloat32, ReduceOp::kSum, (5 << 20) / 4 + 17, false);
  });
  EXPECT_EQ(describe(failures), "");
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

// Tensors that share memory on the window (which reads and writes tensors where they are): the
// batch is packed and each tensor gets its own input's sum, with a count that wraps the small
// window many times.
TEST(ShmAllreduce, FusedTensorsThatShareMemoryGetTheirOwnSums) {
  for (int size : {2, 3}) {
    auto failures = testing::run_shm_world(size, kSmallWindow, [&](ShmRank& rank) {
      testing::check_aliased_segments([&] { return rank.context(); }, rank.rank, rank.size,
                                      Algorithm::kShm, 50000);
    });
    EXPECT_EQ(describe(failures), "") << size << " ranks";
  }
}

// Every way of storing into the window (Options::shm_stores / TUTTI_SHM_STORES, read when a
// window first runs the algorithm): messages above the size where auto starts timing, so auto
// alternates both kinds.
class ShmStoresTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ShmStoresTest, LargeMessagesMatchExactReduction) {
  const auto [stores, size] = GetParam();
  collectives::Settings settings;
  settings.options.shm_stores = stores;
  std::vector<std::string> errors(static_cast<size_t>(size));
  auto failures = testing::run_shm_world(size, 1 << 20, [&](ShmRank& rank) {
    rank.settings = &settings;
    int call = 0;
    for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat64})
      for (size_t bytes : {size_t{300} << 10, (size_t{3} << 20) + 68})
        for (bool in_place : {false, true}) {
          const ReduceOp op = call++ % 2 == 0 ? ReduceOp::kSum : ReduceOp::kMax;
          auto e = check_one(rank, type, op, bytes / element_size(type), in_place);
          if (!e.empty() && errors[rank.rank].empty()) errors[rank.rank] = e;
        }
  });
  EXPECT_EQ(describe(failures), "");
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(Stores, ShmStoresTest,
                         ::testing::Combine(::testing::Values("auto", "cached", "streaming"),
                                            ::testing::Values(2, 3, 4)),
                         [](const auto& info) {
                           return fmt::format("{}_np{}", std::get<0>(info.param),
                                              std::get<1>(info.param));
                         });

TEST(ShmAllreduce, AutoPicksShmWhenTheWindowExists) {
  std::vector<Algorithm> picked(3);
  auto failures = testing::run_shm_world(3, kSmallWindow, [&](ShmRank& rank) {
    picked[rank.rank] = select_allreduce(rank.context(), 1 << 20);
    EXPECT_EQ(check_one(rank, DataType::kInt32, ReduceOp::kMax, 1000, false), "");
  });
  EXPECT_EQ(describe(failures), "");
  for (Algorithm a : picked) EXPECT_EQ(a, Algorithm::kShm);
}

TEST(ShmAllreduce, ForcedWithoutAWindowIsAConfigError) {
  // The thread-channel test double has no LocalWindow, like ranks on several hosts.
  auto failures = testing::run_ranks(2, [](testing::Rank& rank) {
    EXPECT_EQ(rank.transport.local_window(), nullptr);
    std::vector<float> data(16, 1.0f);
    Context ctx = rank.context();
    try {
      allreduce(ctx, Algorithm::kShm, data.data(), data.data(), data.size(), DataType::kFloat32,
                ReduceOp::kSum);
      ADD_FAILURE() << "rank " << rank.rank << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig);
      EXPECT_NE(std::string(e.what()).find("TUTTI_ALGO=shm"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(rank.rank)), std::string::npos)
          << e.what();
    }
  });
  EXPECT_EQ(describe(failures), "");
}

TEST(ShmPlan, SlotsAndSlicesCoverEveryElementOnce) {
  for (size_t area : {size_t{64} << 10, size_t{1} << 20, size_t{4} << 20, size_t{100000}})
    for (int size = 2; size <= 8; ++size)
      for (size_t es : {1, 2, 4, 8}) {
        const ShmPlan p = plan_shm(area, size, es);
        EXPECT_GE(p.slots, kMinSlots) << area << " " << size << " " << es;
        EXPECT_LE(p.slots * p.slot_bytes, area);
        EXPECT_EQ(p.slot_bytes % 512, 0u);
        // The slot ring is shared by calls of every element size.
        EXPECT_EQ(p.slot_bytes, plan_shm(area, size, 1).slot_bytes);
        EXPECT_EQ(p.chunk_elements * es, p.slot_bytes);
        EXPECT_LE(p.single_step_elements, p.chunk_elements);
        for (size_t n : {size_t{1}, size_t{5}, size_t{63}, size_t{1000}, p.chunk_elements}) {
          size_t next = 0;
          for (int r = 0; r < size; ++r) {
            Slice s = slice_of(n, size, r, es);
            EXPECT_EQ(s.first, next) << n << " " << r;
            if (s.count > 0 && s.first + s.count < n) {
              EXPECT_EQ((s.first + s.count) * es % 64, 0u);
            }
            next = s.first + s.count;
          }
          EXPECT_EQ(next, n);
        }
      }
}

}  // namespace
}  // namespace tutti::collectives
