// The hang report's rules (stall_watch.hpp) on three ranks in one process: a StallWatch each (its
// own thread), one in-memory store, and CallProgress records driven by the test. The real job
// (tuttirun, torchrun) is python_stall_report_* and torch2_backend_stall_report.
#include "comm/stall_watch.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/memory_store.hpp"
#include "core/log.hpp"
#include "tutti/types.hpp"

namespace tutti::comm {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kThreshold{400};  // a mark after 100 ms, a look every 100 ms

transport::CallSignature allreduce(uint64_t sequence) {
  transport::CallSignature call;
  call.sequence = sequence;
  call.kind = transport::CallKind::kAllreduce;
  call.count = 4;
  call.dtype = static_cast<int8_t>(DataType::kFloat32);
  call.op = static_cast<int8_t>(ReduceOp::kSum);
  return call;
}

struct Job {
  std::shared_ptr<bootstrap::MemoryStore> store = std::make_shared<bootstrap::MemoryStore>();
  std::vector<std::shared_ptr<CallProgress>> progress;
  std::vector<std::unique_ptr<StallWatch>> watches;

  explicit Job(int size) {
    for (int r = 0; r < size; ++r) {
      progress.push_back(std::make_shared<CallProgress>());
      watches.push_back(std::make_unique<StallWatch>(store, "job", kThreshold));
      watches.back()->add(
          StallWatch::Watched{progress.back(), 0, r, std::vector<std::string>(size, "host-a")});
    }
  }
  bool marked(uint64_t sequence, int rank) {
    return store->missing({"job/stall/0/" + std::to_string(sequence) + "/" + std::to_string(rank)})
        .empty();
  }
};

class StallWatchTest : public ::testing::Test {
 protected:
  void SetUp() override { log::set_threshold(log::Level::kWarn); }
};

TEST_F(StallWatchTest, NamesTheRankThatHasNotCalledFromTheWaitingSideAndItsOwn) {
  Job job(3);
  ::testing::internal::CaptureStderr();
  job.progress[0]->enter(allreduce(1));
  job.progress[1]->enter(allreduce(1));
  std::this_thread::sleep_for(kThreshold * 3);
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("stall: allreduce #1 (4 x float32, sum) on the world communicator has "
                     "waited"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("for rank 2 (host host-a), which has not called it; ranks 0, 1 are in it"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("stall: ranks 0, 1 wait in allreduce #1 (4 x float32, sum) on the world "
                     "communicator for this rank, which has not called it: it has made no call "
                     "there"),
            std::string::npos)
      << out;
  // One line from the waiting side (rank 0's), one from rank 2.
  size_t lines = 0;
  for (size_t at = out.find("stall:"); at != std::string::npos; at = out.find("stall:", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u) << out;
  // The calls return: their marks go.
  job.progress[2]->enter(allreduce(1));
  for (auto& p : job.progress) p->leave(1);
  std::this_thread::sleep_for(kThreshold);
  EXPECT_FALSE(job.marked(1, 0));
  EXPECT_FALSE(job.marked(1, 1));
}

TEST_F(StallWatchTest, ALongCallEveryRankIsInIsNotAStall) {
  Job job(3);
  ::testing::internal::CaptureStderr();
  for (auto& p : job.progress) p->enter(allreduce(1));
  std::this_thread::sleep_for(kThreshold * 3);
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.find("stall:"), std::string::npos) << out;
  EXPECT_TRUE(job.marked(1, 0) && job.marked(1, 1) && job.marked(1, 2));
}

TEST_F(StallWatchTest, CallsThatFinishInTimeWriteNothing) {
  Job job(3);
  ::testing::internal::CaptureStderr();
  for (uint64_t s = 1; s <= 20; ++s) {
    for (auto& p : job.progress) p->enter(allreduce(s));
    std::this_thread::sleep_for(milliseconds(10));
    for (auto& p : job.progress) p->leave(s);
  }
  std::this_thread::sleep_for(kThreshold / 2);
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.find("stall:"), std::string::npos) << out;
  for (uint64_t s = 1; s <= 20; ++s)
    for (int r = 0; r < 3; ++r) EXPECT_FALSE(job.marked(s, r)) << "call " << s << " rank " << r;
}

}  // namespace
}  // namespace tutti::comm
