// Limits every collective entry point enforces: counts whose byte size overflows are refused with
// kInvalidArgument (they once crashed or returned having done nothing), and scratch memory follows
// the message, not the segment-size setting.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "collectives/collectives.hpp"
#include "support/thread_ranks.hpp"
#include "tutti/error.hpp"

namespace tutti::collectives {
namespace {

using testing::Rank;
using testing::run_ranks;

void expect_invalid(const std::function<void(Context&)>& call, const char* what) {
  // One rank suffices: the check runs before anything is sent.
  auto failures = run_ranks(1, [&](Rank& r) {
    Context ctx = r.context();
    try {
      call(ctx);
      ADD_FAILURE() << what << " returned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("more bytes than any buffer can hold"),
                std::string::npos)
          << e.what();
    }
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

TEST(CollectiveLimits, OverflowingCountsAreRefused) {
  float one = 1;
  void* p = &one;
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  constexpr size_t k2to62 = size_t{1} << 62;  // * 4 bytes wraps to 0
  expect_invalid(
      [&](Context& c) {
        allreduce(c, Algorithm::kAuto, p, p, kMax, DataType::kFloat32, ReduceOp::kSum);
      },
      "allreduce of SIZE_MAX floats");
  expect_invalid(
      [&](Context& c) {
        allreduce(c, Algorithm::kRing, p, p, k2to62, DataType::kFloat32, ReduceOp::kSum);
      },
      "allreduce of 2^62 floats");
  expect_invalid([&](Context& c) { broadcast(c, p, k2to62, DataType::kFloat64, 0); },
                 "broadcast of 2^62 doubles");
  expect_invalid([&](Context& c) { allgather(c, p, p, k2to62, DataType::kFloat32); },
                 "allgather of 2^62 floats");
  expect_invalid(
      [&](Context& c) { reduce_scatter(c, p, p, k2to62, DataType::kFloat32, ReduceOp::kSum); },
      "reduce_scatter of 2^62 floats");
}

TEST(CollectiveLimits, AllgatherCountsOverflowAcrossRanks) {
  // count * 4 bytes fits, count * 4 * size does not.
  const size_t count = (size_t{1} << 61) + 1;
  auto failures = run_ranks(4, [&](Rank& r) {
    Context ctx = r.context();
    float x = 0;
    try {
      allgather(ctx, &x, &x, count, DataType::kFloat32);
      ADD_FAILURE() << "allgather returned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

TEST(CollectiveLimits, ScratchFollowsTheMessageNotTheSegmentSetting) {
  // 16 MiB segments once made a 64-byte allreduce hold 266 MB of scratch.
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling}) {
    std::vector<size_t> held(3);
    auto failures = run_ranks(3, [&](Rank& r) {
      std::vector<float> data(16, 1.0f);
      Context ctx = r.context(size_t{16} << 20);
      allreduce(ctx, algorithm, data.data(), data.data(), data.size(), DataType::kFloat32,
                ReduceOp::kSum);
      EXPECT_EQ(data[15], 3.0f);
      held[static_cast<size_t>(r.rank)] = r.scratch.bytes_held();
    });
    ASSERT_EQ(testing::describe_failures(failures), "") << to_string(algorithm);
    for (size_t bytes : held) EXPECT_LE(bytes, size_t{64} << 10) << to_string(algorithm);
  }
}

}  // namespace
}  // namespace tutti::collectives
