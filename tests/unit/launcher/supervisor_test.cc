// The supervisor's stop sequence with real processes (sh) and a backend that records what it was
// asked to do. Grace periods are short; the assertions are about outcomes, never durations.
#include "launcher/supervisor.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace tutti::launcher {
namespace {

class RecordingBackend : public ExecBackend {
 public:
  std::string name() const override { return "test"; }
  bool remote() const override { return is_remote; }
  std::string check_command(const std::vector<std::string>&, const Environment&) override {
    return "";
  }
  ChildProcess start(const RankSlot& slot, const std::vector<std::string>& command,
                     const Environment&) override {
    ChildProcess child = ChildProcess::spawn(SpawnRequest{
        "/bin/sh", command, {"PATH=/usr/bin:/bin", "R=" + std::to_string(slot.rank)}, group});
    if (group == 0) group = child.pid();
    return child;
  }
  void signal_job(int sig) override {
    signals.push_back(sig);
    if (group > 0) ::kill(-group, sig);
  }
  bool finish_job(Deadline) override {
    finished = true;
    return true;
  }
  pid_t group = 0;
  std::vector<int> signals;
  bool finished = false;
  bool is_remote = false;  // stands in for the ssh/kubexec backend, whose agents exit 128 + signal
};

struct Job {
  RecordingBackend backend;
  MemorySink sink;
  OutputMux mux{sink, true};
  SignalWatcher watcher;
  std::vector<RankProcess> ranks;

  // One shell script per rank.
  explicit Job(const std::vector<std::string>& scripts) {
    JobPlan plan = plan_local(static_cast<int>(scripts.size()));
    for (const RankSlot& slot : plan.slots) {
      ranks.push_back(RankProcess{
          slot, backend.start(slot, {"sh", "-c", scripts[static_cast<size_t>(slot.rank)]}, {})});
      mux.add(slot.rank, Stream::kStdout, ranks.back().process.take_stdout());
      mux.add(slot.rank, Stream::kStderr, ranks.back().process.take_stderr());
    }
  }
  int run(double grace, int min_ranks = 0) {
    return Supervisor(ranks, backend, mux, watcher, {grace, false, backend.is_remote, min_ranks})
        .run();
  }
};

TEST(Supervisor, AllSucceed) {
  Job job({"echo a", "echo b; echo c >&2", "exit 0"});
  EXPECT_EQ(job.run(5), 0);
  EXPECT_TRUE(job.backend.signals == std::vector<int>{});
  EXPECT_TRUE(job.backend.finished);
  EXPECT_NE(job.sink.out.find("[0] a\n"), std::string::npos);
  EXPECT_NE(job.sink.out.find("[1] b\n"), std::string::npos);
  EXPECT_EQ(job.sink.err, "[1] c\n");
}

TEST(Supervisor, FirstFailureStatusAndItsLastWordsFirst) {
  Job job({"sleep 30", "echo bye; exit 3", "sleep 30"});
  EXPECT_EQ(job.run(0.2), 3);
  EXPECT_EQ(job.backend.signals, std::vector<int>{SIGTERM});
  // The rank's own output comes before tuttirun's line about it.
  size_t bye = job.sink.out.find("[1] bye");
  ASSERT_NE(bye, std::string::npos);
  EXPECT_NE(job.sink.err.find("tuttirun: rank 1 (pid "), std::string::npos) << job.sink.err;
  EXPECT_NE(job.sink.err.find(") exited with status 3\n"), std::string::npos) << job.sink.err;
  EXPECT_NE(job.sink.err.find("tuttirun: 3 of 3 ranks failed: rank 1 "), std::string::npos)
      << job.sink.err;
  EXPECT_NE(job.sink.err.find("(SIGTERM) sent by tuttirun"), std::string::npos) << job.sink.err;
}

// --min-np: a failed rank leaves the others running while at least min_ranks still run; the job
// then ends with 0 when they succeed, and says which ranks it went on without.
TEST(Supervisor, MinRanksLetsTheOthersGoOn) {
  Job job({"sleep 1; echo done", "exit 3", "sleep 1; echo done"});
  EXPECT_EQ(job.run(0.2, 2), 0);
  EXPECT_EQ(job.backend.signals, std::vector<int>{});
  EXPECT_NE(job.sink.out.find("[0] done"), std::string::npos) << job.sink.out;
  EXPECT_NE(job.sink.out.find("[2] done"), std::string::npos) << job.sink.out;
  EXPECT_NE(job.sink.err.find("exited with status 3; 2 ranks go on (--min-np 2)"),
            std::string::npos)
      << job.sink.err;
  EXPECT_NE(job.sink.err.find("(the others went on without them: --min-np 2)"), std::string::npos)
      << job.sink.err;
}

// Below min_ranks the job stops as without it, with the status of the failure that crossed it.
TEST(Supervisor, BelowMinRanksTheJobStops) {
  Job job({"sleep 30", "exit 3", "sleep 0.5; exit 4"});
  EXPECT_EQ(job.run(0.2, 2), 4);
  EXPECT_EQ(job.backend.signals, std::vector<int>{SIGTERM});
  EXPECT_NE(job.sink.err.find("1 rank left, fewer than --min-np 2; stopping the job"),
            std::string::npos)
      << job.sink.err;
}

// A local rank that catches tuttirun's SIGTERM and exits 128 + SIGTERM itself was still stopped by
// tuttirun; it did exit, so it is not reported as killed.
TEST(Supervisor, ExitStatusOfAStopSignalCountsAsStoppedByTuttirun) {
  Job job({"trap 'exit 143' TERM; sleep 30 & wait", "exit 2"});
  EXPECT_EQ(job.run(0.2), 2);
  EXPECT_EQ(job.backend.signals, std::vector<int>{SIGTERM});
  EXPECT_NE(job.sink.err.find("exited with status 143 (stopped by tuttirun)"), std::string::npos)
      << job.sink.err;
}

// A remote rank's agent exits 128 + the signal that ended the rank (here the script plays the agent
// that got tuttirun's stop). The summary reads as for a local rank: the signal, sent by tuttirun.
TEST(Supervisor, RemoteRankStoppedByTuttirunReadsAsTheSignalSentByTuttirun) {
  Job job(
      {"trap 'exit 143' TERM; sleep 30 & wait", "exit 2", "trap 'exit 137' TERM; sleep 30 & wait"});
  job.backend.is_remote = true;
  EXPECT_EQ(job.run(0.2), 2);
  EXPECT_EQ(job.backend.signals, std::vector<int>{SIGTERM});
  const std::string& err = job.sink.err;
  EXPECT_NE(err.find("exited with status 2\n"), std::string::npos) << err;
  EXPECT_NE(err.find("tuttirun: 3 of 3 ranks failed:"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 0 on localhost (pid "), std::string::npos) << err;
  EXPECT_NE(err.find(") was killed by signal 15 (SIGTERM) sent by tuttirun"), std::string::npos)
      << err;
  EXPECT_NE(err.find(") was killed by signal 9 (SIGKILL) sent by tuttirun"), std::string::npos)
      << err;
  EXPECT_EQ(err.find("status 143"), std::string::npos) << err;
  EXPECT_EQ(err.find("stopped by tuttirun"), std::string::npos) << err;
}

// Before tuttirun stops anything, a remote rank's 143 is that rank's own exit status: the agent's
// code cannot say whether the rank exited 143 or died of SIGTERM from elsewhere, so it is reported
// as it came, and is the job's exit code.
TEST(Supervisor, RemoteRanksOwnStopCodeIsReportedAsItCame) {
  Job job({"exit 143", "sleep 30"});
  job.backend.is_remote = true;
  EXPECT_EQ(job.run(0.2), 143);
  EXPECT_NE(job.sink.err.find("tuttirun: rank 0 on localhost (pid "), std::string::npos)
      << job.sink.err;
  EXPECT_NE(job.sink.err.find(") exited with status 143\n"), std::string::npos) << job.sink.err;
}

TEST(Supervisor, RanksThatExitDuringGraceAreNotSignaled) {
  Job job({"exit 4", "read x; exit 0"});  // stdin is /dev/null: exits at once by itself
  EXPECT_EQ(job.run(30), 4);
  EXPECT_TRUE(job.backend.signals.empty());
}

TEST(Supervisor, SigtermIgnoredMeansSigkill) {
  Job job({"trap '' TERM; sleep 30", "exit 2"});
  EXPECT_EQ(job.run(0.2), 2);
  EXPECT_EQ(job.backend.signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_NE(job.sink.err.find("ignored SIGTERM"), std::string::npos) << job.sink.err;
  EXPECT_NE(job.sink.err.find("was killed by signal 9 (SIGKILL) sent by tuttirun"),
            std::string::npos)
      << job.sink.err;
}

TEST(Supervisor, KilledBySignalIs128PlusSignal) {
  Job job({"kill -9 $$", "sleep 30"});
  EXPECT_EQ(job.run(0.2), 137);
  EXPECT_NE(job.sink.err.find("was killed by signal 9 (SIGKILL)\n"), std::string::npos)
      << job.sink.err;
}

TEST(Supervisor, InterruptForwardsSigterm) {
  Job job({"sleep 30", "sleep 30"});
  ASSERT_EQ(::raise(SIGINT), 0);  // caught by the job's SignalWatcher
  EXPECT_EQ(job.run(5), 130);
  ASSERT_FALSE(job.backend.signals.empty());
  EXPECT_EQ(job.backend.signals.front(), SIGTERM);
  EXPECT_NE(job.sink.err.find("received SIGINT"), std::string::npos) << job.sink.err;
}

// A second interrupt kills at once and says so; it once also claimed that the ranks "ignored
// SIGTERM for 10s" half a second after the first.
TEST(Supervisor, SecondInterruptKillsWithoutClaimingTheGraceRanOut) {
  Job job({"trap '' TERM; sleep 30", "trap '' TERM; sleep 30"});
  std::thread interrupter([] {
    for (int i = 0; i < 2; ++i) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(500));  // two signals, not one coalesced
      ::kill(::getpid(), SIGINT);
    }
  });
  EXPECT_EQ(job.run(30), 130);
  interrupter.join();
  EXPECT_EQ(job.backend.signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_NE(job.sink.err.find("received SIGINT again; sending SIGKILL"), std::string::npos)
      << job.sink.err;
  EXPECT_EQ(job.sink.err.find("ignored SIGTERM"), std::string::npos) << job.sink.err;
}

}  // namespace
}  // namespace tutti::launcher
