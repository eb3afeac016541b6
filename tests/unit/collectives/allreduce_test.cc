// Allreduce correctness for every algorithm x world size x data type, looping inside each world
// over every op, several counts (empty, one element, fewer elements than ranks, uneven splits,
// many tiny pipeline segments, a large buffer) and in place / out of place. Runs over the
// in-process test double (support/thread_channel.hpp); tcp/shm are covered in tests/integration.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "collectives/collectives.hpp"
#include "core/error.hpp"
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

std::vector<Case> cases_for(int size, DataType type) {
  std::vector<Case> cases = {
      {0, 64},      {1, 64}, {static_cast<size_t>(size - 1), 64},
      {1000, 4096},  // uneven chunks, a few segments
      {1000, 64},    // dozens of 64-byte segments per chunk: deep pipelines
      {4099, 1000},  // odd count, segments that are not a whole number of 8-byte elements
  };
  // One large buffer for a few types keeps the suite fast while exercising the default path.
  // Just above 256 KiB, halving-doubling pairs nearest partners first: every op there, in place
  // and not (the large buffer runs sum only).
  if (type == DataType::kFloat32 || type == DataType::kInt64) {
    cases.push_back({65536 + 1001, 64 << 10});
    cases.push_back({1000003, 256 << 10});
  }
  return cases;
}

// Runs every op x case x placement on one world; returns the first failure of this rank.
std::string check_allreduce(Rank& rank, Algorithm algorithm, DataType type) {
  for (const Case& c : cases_for(rank.size, type)) {
    for (ReduceOp op : kOps) {
      // The large buffer checks the default pipeline once per type, not every op and placement.
      const bool large = c.count > 100000;
      if (large && op != ReduceOp::kSum) continue;
      for (bool in_place : {false, true}) {
        if (large && in_place != (type == DataType::kInt64)) continue;
        auto send = testing::make_buffer(
            type, c.count, [&](size_t i) { return testing::input_value(op, rank.rank, i); });
        const auto original = send;
        std::vector<std::byte> recv(in_place ? 0 : send.size(), std::byte{0xee});
        void* out = in_place ? send.data() : recv.data();
        Context ctx = rank.context(c.segment_bytes);
        allreduce(ctx, algorithm, send.data(), out, c.count, type, op);
        const std::string label =
            fmt::format("{} allreduce, rank {} of {}, {} {}, count {}, segment {} B, {}",
                        to_string(algorithm), rank.rank, rank.size, to_string(type), to_string(op),
                        c.count, c.segment_bytes, in_place ? "in place" : "out of place");
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

class AllreduceTest : public ::testing::TestWithParam<std::tuple<Algorithm, int, DataType>> {};

TEST_P(AllreduceTest, MatchesExactReduction) {
  const auto [algorithm, size, type] = GetParam();
  std::vector<std::string> errors(static_cast<size_t>(size));
  auto failures = testing::run_ranks(size, [&, algorithm = algorithm, type = type](Rank& rank) {
    errors[static_cast<size_t>(rank.rank)] = check_allreduce(rank, algorithm, type);
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, AllreduceTest,
                         ::testing::Combine(::testing::Values(Algorithm::kRing, Algorithm::kTree,
                                                              Algorithm::kHalvingDoubling),
                                            ::testing::Values(1, 2, 3, 4, 5, 7, 8),
                                            ::testing::ValuesIn(kTypes)),
                         [](const auto& info) {
                           return fmt::format("{}_np{}_{}", to_string(std::get<0>(info.param)),
                                              std::get<1>(info.param),
                                              to_string(std::get<2>(info.param)));
                         });

// kAuto picks by size; every choice must give the same exact result.
TEST(AllreduceAuto, EverySizeClassIsCorrect) {
  for (int size : {3, 6}) {
    std::vector<std::string> errors(static_cast<size_t>(size));
    auto failures = testing::run_ranks(size, [&](Rank& rank) {
      for (size_t count : {size_t{10}, size_t{100000}, size_t{2000000}}) {
        auto send = testing::make_buffer(DataType::kFloat32, count, [&](size_t i) {
          return testing::input_value(ReduceOp::kSum, rank.rank, i);
        });
        Context ctx = rank.context();
        allreduce(ctx, Algorithm::kAuto, send.data(), send.data(), count, DataType::kFloat32,
                  ReduceOp::kSum);
        auto error = testing::check_buffer(
            DataType::kFloat32, ReduceOp::kSum, send.data(), count,
            [&](size_t i) {
              return testing::expected_value(DataType::kFloat32, ReduceOp::kSum, size, i);
            },
            fmt::format("auto allreduce of {} floats on rank {} of {}", count, rank.rank, size));
        if (!error.empty()) errors[static_cast<size_t>(rank.rank)] = error;
      }
    });
    EXPECT_EQ(testing::describe_failures(failures), "");
    for (const auto& e : errors) EXPECT_EQ(e, "");
  }
}

// A single-rank context needs no channels: a transport with only the null self entry.
class SingleRank : public ::testing::Test {
 protected:
  SingleRank() : transport_(0, make_channels()) {}
  static std::vector<std::unique_ptr<transport::Channel>> make_channels() {
    std::vector<std::unique_ptr<transport::Channel>> channels;
    channels.push_back(nullptr);
    return channels;
  }
  Context context() {
    return Context(Group{transport_, 0, 1, 1024, scratch_}, {1, Deadline::after_seconds(5)});
  }
  transport::Transport transport_;
  Scratch scratch_;
};

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;
}

TEST_F(SingleRank, RejectsUnknownDataTypeAndOp) {
  float data[4] = {1, 2, 3, 4};
  Context ctx = context();
  EXPECT_EQ(code_of([&] {
              allreduce(ctx, Algorithm::kRing, data, data, 4, static_cast<DataType>(42),
                        ReduceOp::kSum);
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              allreduce(ctx, Algorithm::kRing, data, data, 4, DataType::kFloat32,
                        static_cast<ReduceOp>(9));
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              allreduce(ctx, Algorithm::kRing, nullptr, data, 4, DataType::kFloat32,
                        ReduceOp::kSum);
            }),
            ErrorCode::kInvalidArgument);
}

TEST_F(SingleRank, CopiesOutOfPlaceAndAveragesToItself) {
  const int32_t send[3] = {7, -2, 9};
  int32_t recv[3] = {0, 0, 0};
  Context ctx = context();
  allreduce(ctx, Algorithm::kAuto, send, recv, 3, DataType::kInt32, ReduceOp::kAvg);
  EXPECT_EQ(std::vector<int32_t>(recv, recv + 3), (std::vector<int32_t>{7, -2, 9}));
}

TEST_F(SingleRank, BroadcastRejectsRootOutsideWorld) {
  float data[1] = {1};
  Context ctx = context();
  EXPECT_EQ(code_of([&] { broadcast(ctx, data, 1, DataType::kFloat32, 1); }),
            ErrorCode::kInvalidArgument);
}

// A rank that never joins makes the others fail at their deadline, not hang.
TEST(AllreduceFailure, MissingRankTimesOut) {
  auto failures = testing::run_ranks(3, [](Rank& rank) {
    if (rank.rank == 2) return;
    float data[64] = {};
    Context ctx = rank.context(1024, 0.3);
    allreduce(ctx, Algorithm::kRing, data, data, 64, DataType::kFloat32, ReduceOp::kSum);
  });
  ASSERT_TRUE(failures[0] || failures[1]);
  for (int r : {0, 1}) {
    if (!failures[static_cast<size_t>(r)]) continue;
    try {
      std::rethrow_exception(failures[static_cast<size_t>(r)]);
    } catch (const Error& e) {
      // The first to time out aborts; the other may see that abort first.
      EXPECT_TRUE(e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kPeerFailure)
          << e.what();
    }
  }
  EXPECT_FALSE(failures[2]);
}

}  // namespace
}  // namespace tutti::collectives

namespace tutti::collectives {
namespace {

// prescale on every rank's input and postscale on the result (the engine's scaling), through each
// algorithm's first and final combine, on both sides of halving-doubling's change of pairing
// order at 256 KiB: 3 x input summed, then x 0.25, is exact in float32 for these small integers.
TEST(AllreduceScaled, PrescaleAndPostscaleLandOnceEach) {
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling})
    for (int size : {2, 3, 4, 5, 8}) {
      std::vector<std::string> errors(static_cast<size_t>(size));
      auto failures = testing::run_ranks(size, [&](Rank& rank) {
        for (size_t count : {size_t{1000}, size_t{65536 + 1001}})
          for (bool in_place : {false, true}) {
            std::vector<float> send(count), recv(count, -1.0f);
            for (size_t i = 0; i < count; ++i)
              send[i] = static_cast<float>(rank.rank + 1 + static_cast<int>(i % 7));
            Context ctx = rank.context();
            ctx.prescale = 3.0;
            ctx.postscale = 0.25;
            float* out = in_place ? send.data() : recv.data();
            allreduce(ctx, algorithm, send.data(), out, count, DataType::kFloat32, ReduceOp::kSum);
            for (size_t i = 0; i < count; ++i) {
              const float due = 0.75f * static_cast<float>(size * (size + 1) / 2 +
                                                           size * static_cast<int>(i % 7));
              if (out[i] != due) {
                errors[static_cast<size_t>(rank.rank)] = fmt::format(
                    "{} np{} count {} {}: element {} is {} where {} was due", to_string(algorithm),
                    size, count, in_place ? "in place" : "out of place", i, out[i], due);
                return;
              }
            }
          }
      });
      EXPECT_EQ(testing::describe_failures(failures), "");
      for (const auto& e : errors) EXPECT_EQ(e, "");
    }
}

}  // namespace
}  // namespace tutti::collectives
