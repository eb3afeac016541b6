// The hang report's rules (stall_watch.hpp) on three ranks in one process: a StallWatch each (its
// own thread), one in-memory store, and CallProgress records driven by the test. The real job
// (tuttirun, torchrun) is python_stall_report_* and torch2_backend_stall_report. Each waits for
// what it expects with a deadline, not for a fixed time.
#include "comm/stall_watch.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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

// Three ranks' watches and what they report, collected (with the level) instead of logged.
struct Job {
  std::shared_ptr<bootstrap::MemoryStore> store = std::make_shared<bootstrap::MemoryStore>();
  std::vector<std::shared_ptr<CallProgress>> progress;
  std::mutex mutex;
  std::vector<std::pair<log::Level, std::string>> lines;  // under mutex
  std::vector<std::unique_ptr<StallWatch>> watches;       // last: stopped before the rest goes

  explicit Job(int size) {
    for (int r = 0; r < size; ++r) {
      progress.push_back(std::make_shared<CallProgress>());
      watches.push_back(std::make_unique<StallWatch>(
          store, "job", kThreshold, [this](log::Level level, const std::string& line) {
            std::lock_guard lock(mutex);
            lines.emplace_back(level, line);
          }));
      watches.back()->add(
          StallWatch::Watched{progress.back(), 0, r, std::vector<std::string>(size, "host-a")});
    }
  }
  ~Job() { watches.clear(); }

  bool marked(uint64_t sequence, int rank) {
    return store->missing({"job/stall/0/" + std::to_string(sequence) + "/" + std::to_string(rank)})
        .empty();
  }
  std::vector<std::string> reported(log::Level level) {
    std::lock_guard lock(mutex);
    std::vector<std::string> out;
    for (const auto& [l, line] : lines)
      if (l == level) out.push_back(line);
    return out;
  }
  // Waits (up to 20 s: the watches run every 100 ms) until `done`.
  bool eventually(const std::function<bool()>& done) {
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(milliseconds(20)))
      if (done()) return true;
    return done();
  }
};

bool has(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& line : lines)
    if (line.find(part) != std::string::npos) return true;
  return false;
}

TEST(StallWatchTest, NamesTheRankThatHasNotCalledFromTheWaitingSideAndItsOwn) {
  Job job(3);
  job.progress[0]->enter(allreduce(1));
  job.progress[1]->enter(allreduce(1));
  ASSERT_TRUE(job.eventually([&] { return job.reported(log::Level::kWarn).size() >= 2; }))
      << "no report within 20 s";
  // Past a few more periods: no line comes twice, and no other rank reports.
  std::this_thread::sleep_for(kThreshold);
  const auto warned = job.reported(log::Level::kWarn);
  ASSERT_EQ(warned.size(), 2u) << ::testing::PrintToString(warned);
  EXPECT_TRUE(has(warned,
                  "stall: allreduce #1 (4 x float32, sum) on the world communicator has "
                  "waited"))
      << ::testing::PrintToString(warned);
  EXPECT_TRUE(has(warned,
                  "for rank 2 (host host-a), which has not called it; ranks 0, 1 are in "
                  "it"))
      << ::testing::PrintToString(warned);
  EXPECT_TRUE(has(warned,
                  "stall: ranks 0, 1 wait in allreduce #1 (4 x float32, sum) on the world "
                  "communicator for this rank, which has not called it: it has made no "
                  "call there"))
      << ::testing::PrintToString(warned);
  // The calls return: their marks go.
  job.progress[2]->enter(allreduce(1));
  for (auto& p : job.progress) p->leave(1);
  EXPECT_TRUE(job.eventually([&] { return !job.marked(1, 0) && !job.marked(1, 1); }));
}

TEST(StallWatchTest, ALongCallEveryRankIsInIsNotAStall) {
  Job job(3);
  for (auto& p : job.progress) p->enter(allreduce(1));
  ASSERT_TRUE(job.eventually([&] { return !job.reported(log::Level::kInfo).empty(); }))
      << "rank 0 never looked at the long call";
  EXPECT_TRUE(has(job.reported(log::Level::kInfo), "all 3 ranks have been in it"));
  EXPECT_TRUE(job.reported(log::Level::kWarn).empty())
      << ::testing::PrintToString(job.reported(log::Level::kWarn));
  EXPECT_TRUE(job.marked(1, 0) && job.marked(1, 1) && job.marked(1, 2));
}

TEST(StallWatchTest, CallsThatFinishBeforeTheMarkWriteNothing) {
  Job job(3);
  // Calls that last no time at all: whatever the load, no watch sees one a quarter period old.
  for (uint64_t s = 1; s <= 20; ++s) {
    for (auto& p : job.progress) p->enter(allreduce(s));
    for (auto& p : job.progress) p->leave(s);
  }
  std::this_thread::sleep_for(kThreshold / 2);
  EXPECT_TRUE(job.reported(log::Level::kWarn).empty());
  for (uint64_t s = 1; s <= 20; ++s)
    for (int r = 0; r < 3; ++r) EXPECT_FALSE(job.marked(s, r)) << "call " << s << " rank " << r;
}

}  // namespace
}  // namespace tutti::comm
