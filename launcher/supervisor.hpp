// The supervisor watches the running job: it forwards output, reaps ranks, and on the first failure
// (or SIGINT/SIGTERM to tuttirun) stops the rest in steps: a grace period to exit by themselves
// (they notice the dead peer and say so), then SIGTERM, then SIGKILL. Its result is the exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/child_process.hpp"
#include "launcher/elastic_growth.hpp"
#include "launcher/exec_backend.hpp"
#include "launcher/output_mux.hpp"
#include "launcher/plan.hpp"
#include "launcher/signal_watcher.hpp"
#include "launcher/silent_ranks.hpp"

namespace tutti::launcher {

struct RankProcess {
  RankSlot slot;
  ChildProcess process;
};

struct SupervisorOptions {
  double grace_seconds = 5.0;
  bool verbose = false;
  bool name_hosts = false;  // say which host a rank ran on (remote backends)
  // --min-np: a failed rank does not stop the job while at least this many ranks still run (0:
  // the first failure stops it).
  int min_ranks = 0;
  // An elastic job (with growth) below min_ranks waits this long for hosts to bring it back before
  // it stops (--elastic-timeout).
  double elastic_timeout_seconds = 600.0;
  // --hang-timeout (0: off), for what tuttirun says when it ends a silent rank.
  double hang_timeout_seconds = 0;
};

// One rank's end, as the summary reports it.
struct RankOutcome {
  int rank = 0;
  pid_t pid = 0;
  ExitStatus status;
  bool signaled_by_us = false;  // ended by a signal tuttirun itself sent while stopping the job
  std::string host;             // empty for ranks on this host
};

// "tuttirun: 2 of 4 ranks failed: rank 1 (pid 10) exited with status 3; rank 2 (pid 11) was killed
// by signal 15 (SIGTERM) sent by tuttirun". Empty when nothing failed.
std::string failure_summary(const std::vector<RankOutcome>& failed, int world_size);

class Supervisor {
 public:
  // `growth` (elastic jobs, may be null) is asked to grow while the job runs, and told of every
  // rank's end; ranks it starts are appended to `ranks`.
  Supervisor(std::vector<RankProcess>& ranks, ExecBackend& backend, OutputMux& mux,
             SignalWatcher& signals, SupervisorOptions options, ElasticGrowth* growth = nullptr,
             SilentRanks* silent = nullptr);

  // Runs until every rank has been reaped and its output drained. Returns tuttirun's exit code:
  // 0, the first failure's status (128 + signal for a signal), or 128 + the signal that
  // interrupted tuttirun.
  int run();

  // Whether a signal to tuttirun (SIGINT, SIGTERM, SIGHUP) stopped the job.
  bool interrupted() const { return interrupted_; }

 private:
  enum class Phase { kRunning, kGrace, kTerminating, kKilling };

  void on_exit(RankProcess& r, const ExitStatus& status);
  void on_signal(int sig);
  // A rank whose heartbeat stopped (--hang-timeout): killed, so that it fails like a dead one.
  void on_silent(const SilentRank& silent);
  void escalate();
  // Below --min-np in an elastic job: back above it, or out of time (then the job stops).
  void check_below_min();
  void enter(Phase phase, double seconds);
  void say(const std::string& line);
  std::string alive_ranks() const;

  std::vector<RankProcess>& ranks_;
  ExecBackend& backend_;
  OutputMux& mux_;
  SignalWatcher& signals_;
  SupervisorOptions options_;
  ElasticGrowth* growth_;
  SilentRanks* silent_;

  Phase phase_ = Phase::kRunning;
  Deadline phase_deadline_ = Deadline::never();
  std::optional<int> exit_code_;  // fixed by the first failure or interrupt
  std::optional<int> sent_signal_;
  std::vector<RankOutcome> failed_;
  bool interrupted_ = false;
  bool kill_now_ = false;  // a second interrupt asked for SIGKILL at once
  bool went_on_ = false;   // a rank failed and the others went on (--min-np)
  int succeeded_ = 0;      // ranks that exited 0
  // Set while an elastic job runs below --min-np, waiting for hosts: when it gives up.
  std::optional<Deadline> below_min_until_;
};

}  // namespace tutti::launcher
