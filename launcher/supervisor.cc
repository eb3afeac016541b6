#include "launcher/supervisor.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::launcher {
namespace {

// Reap at least this often even without SIGCHLD, in case a wake-up byte was lost on a full pipe.
constexpr int kReapIntervalMs = 100;
// After SIGKILL the kernel needs no cooperation; this only bounds a process stuck in the kernel.
constexpr double kKillWaitSeconds = 10.0;
// Output that grandchildren keep open after every rank is gone gets this long to arrive.
constexpr double kDrainSeconds = 2.0;

}  // namespace

std::string failure_summary(const std::vector<RankOutcome>& failed, int world_size) {
  if (failed.empty()) return "";
  std::string out = fmt::format("tuttirun: {} of {} rank{} failed:", failed.size(), world_size,
                                world_size == 1 ? "" : "s");
  for (size_t i = 0; i < failed.size(); ++i) {
    const RankOutcome& f = failed[i];
    out += fmt::format("{} {} (pid {}) {}{}", i == 0 ? "" : ";", rank_and_host(f.rank, f.host),
                       f.pid, f.status.describe(),
                       !f.signaled_by_us                              ? ""
                       : f.status.kind == ExitStatus::Kind::kSignaled ? " sent by tuttirun"
                                                                      : " (stopped by tuttirun)");
  }
  return out;
}

Supervisor::Supervisor(std::vector<RankProcess>& ranks, ExecBackend& backend, OutputMux& mux,
                       SignalWatcher& signals, SupervisorOptions options, ElasticGrowth* growth,
                       SilentRanks* silent)
    : ranks_(ranks),
      backend_(backend),
      mux_(mux),
      signals_(signals),
      options_(options),
      growth_(growth),
      silent_(silent) {}

void Supervisor::say(const std::string& line) {
  mux_.sink().write(Stream::kStderr, line + "\n");
}

std::string Supervisor::alive_ranks() const {
  std::string out;
  for (const RankProcess& r : ranks_)
    if (!r.process.reaped()) out += fmt::format("{}{}", out.empty() ? "" : ", ", r.slot.rank);
  return out;
}

void Supervisor::enter(Phase phase, double seconds) {
  phase_ = phase;
  phase_deadline_ = Deadline::after_seconds(seconds);
}

void Supervisor::on_exit(RankProcess& r, const ExitStatus& status) {
  if (options_.verbose)
    log::info("tuttirun: rank {} (pid {}) {}", r.slot.rank, r.process.pid(), status.describe());
  if (growth_ != nullptr) growth_->on_exit(r.slot.rank, !status.success());
  if (status.success()) {
    ++succeeded_;
    return;
  }
  const auto stop_signal = [](int s) { return s == SIGTERM || s == SIGKILL; };
  const bool stop_code =
      status.kind == ExitStatus::Kind::kExited && stop_signal(status.value - 128);
  // A remote rank's agent exits with 128 + the signal that ended the rank: a signal cannot cross
  // ssh or kubectl as one. Once tuttirun has closed the agents' stdins, 128 + SIGTERM or SIGKILL is
  // the agent's stop signal, sent on tuttirun's behalf: report the signal, as for a local rank.
  ExitStatus seen = backend_.remote() && sent_signal_ && stop_code
                        ? ExitStatus::signaled(status.value - 128)
                        : status;
  // A local rank that caught the stop signal and exited 128 + signal itself was stopped by us too.
  bool ours = sent_signal_.has_value() &&
              ((seen.kind == ExitStatus::Kind::kSignaled && stop_signal(seen.value)) || stop_code);
  std::string host = options_.name_hosts ? r.slot.host : "";
  failed_.push_back(RankOutcome{r.slot.rank, r.process.pid(), seen, ours, host});
  if (phase_ != Phase::kRunning) return;
  mux_.flush_rank(r.slot.rank);
  if (options_.min_ranks > 0) {
    const int running = static_cast<int>(std::count_if(
        ranks_.begin(), ranks_.end(), [](const RankProcess& p) { return !p.process.reaped(); }));
    // Ranks that already finished their work count as ranks the job kept: a failure after them
    // (a last rank killed once the others were done) does not undo the job.
    if (running + succeeded_ >= options_.min_ranks) {
      say(fmt::format("{}; {} rank{} go on (--min-np {})",
                      rank_failure_line(r.slot.rank, r.process.pid(), status, host), running,
                      running == 1 ? "" : "s", options_.min_ranks));
      went_on_ = true;
      return;
    }
    if (growth_ != nullptr && running > 0) {
      // Horovod's rule: an elastic job below its minimum waits for hosts (the discovery script
      // goes on; new ranks join the survivors, who wait for them in elastic::run).
      if (!below_min_until_)
        below_min_until_ = Deadline::after_seconds(options_.elastic_timeout_seconds);
      say(fmt::format(
          "{}; {} rank{} left, fewer than --min-np {}: waiting up to {}s for hosts to "
          "add ranks (--elastic-timeout)",
          rank_failure_line(r.slot.rank, r.process.pid(), status, host), running,
          running == 1 ? "" : "s", options_.min_ranks, options_.elastic_timeout_seconds));
      went_on_ = true;
      return;
    }
    say(fmt::format("tuttirun: {} rank{} left, fewer than --min-np {}; stopping the job", running,
                    running == 1 ? "" : "s", options_.min_ranks));
  }
  say(rank_failure_line(r.slot.rank, r.process.pid(), status, host));
  exit_code_ = status.shell_code();
  enter(Phase::kGrace, options_.grace_seconds);
}

void Supervisor::on_signal(int sig) {
  if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP) return;
  if (!exit_code_) exit_code_ = 128 + sig;
  interrupted_ = true;
  if (phase_ == Phase::kRunning || phase_ == Phase::kGrace) {
    say(fmt::format("tuttirun: received {}; sending SIGTERM to ranks {} (SIGKILL after {}s)",
                    signal_name(sig), alive_ranks(), options_.grace_seconds));
    sent_signal_ = SIGTERM;
    backend_.signal_job(SIGTERM);
    enter(Phase::kTerminating, options_.grace_seconds);
  } else if (phase_ == Phase::kTerminating) {
    // A second interrupt means "now"; escalate() then sends SIGKILL without claiming the ranks
    // ignored SIGTERM for the whole grace period.
    say(fmt::format("tuttirun: received {} again; sending SIGKILL to ranks {}", signal_name(sig),
                    alive_ranks()));
    kill_now_ = true;
    phase_deadline_ = Deadline::after_seconds(0);
  }
}

void Supervisor::on_silent(const SilentRank& silent) {
  if (silent.launch_id < 0 || silent.launch_id >= static_cast<int64_t>(ranks_.size())) return;
  RankProcess& r = ranks_[static_cast<size_t>(silent.launch_id)];
  if (r.process.reaped()) return;
  const std::string host = options_.name_hosts ? r.slot.host : "";
  say(fmt::format(
      "tuttirun: {} (pid {}) sent no heartbeat for {:.1f}s (stopped, or hung in the kernel); "
      "killing it, as a failed rank (--hang-timeout {:g})",
      rank_and_host(r.slot.rank, host), backend_.remote() ? r.process.pid() : silent.pid,
      silent.seconds, options_.hang_timeout_seconds));
  // Here, the process that beat is ours to kill (a wrapper script's child, say), once it is seen
  // to belong to the job's process group. Remote, ending the exec client makes the rank's agent
  // end the rank.
  if (!backend_.remote() && silent.pid > 0 && ::getpgid(silent.pid) >= 0 &&
      ::getpgid(silent.pid) == ::getpgid(r.process.pid()))
    ::kill(silent.pid, SIGKILL);
  else
    r.process.signal(SIGKILL);
}

void Supervisor::escalate() {
  switch (phase_) {
    case Phase::kRunning:
      return;
    case Phase::kGrace:
      say(fmt::format("tuttirun: ranks {} still running {}s after the failure; sending SIGTERM",
                      alive_ranks(), options_.grace_seconds));
      sent_signal_ = SIGTERM;
      backend_.signal_job(SIGTERM);
      enter(Phase::kTerminating, options_.grace_seconds);
      return;
    case Phase::kTerminating:
      if (!kill_now_)
        say(fmt::format("tuttirun: ranks {} ignored SIGTERM for {}s; sending SIGKILL",
                        alive_ranks(), options_.grace_seconds));
      sent_signal_ = SIGKILL;
      backend_.signal_job(SIGKILL);
      // A rank that left the job's process group is still our child: kill it directly too.
      for (RankProcess& r : ranks_) r.process.signal(SIGKILL);
      enter(Phase::kKilling, kKillWaitSeconds);
      return;
    case Phase::kKilling:
      say(fmt::format(
          "tuttirun: ranks {} survive SIGKILL (stuck in the kernel?); still waiting for them",
          alive_ranks()));
      for (RankProcess& r : ranks_) r.process.signal(SIGKILL);
      enter(Phase::kKilling, kKillWaitSeconds);
      return;
  }
}

void Supervisor::check_below_min() {
  const int running = static_cast<int>(std::count_if(
      ranks_.begin(), ranks_.end(), [](const RankProcess& p) { return !p.process.reaped(); }));
  if (running >= options_.min_ranks) {
    say(fmt::format("tuttirun: {} ranks again (--min-np {}); the job goes on", running,
                    options_.min_ranks));
    below_min_until_.reset();
  } else if (running == 0 || below_min_until_->expired()) {
    say(
        fmt::format("tuttirun: no hosts brought the job back to --min-np {} within {}s "
                    "(--elastic-timeout); stopping it",
                    options_.min_ranks, options_.elastic_timeout_seconds));
    below_min_until_.reset();
    if (!exit_code_) exit_code_ = 1;
    enter(Phase::kGrace, options_.grace_seconds);
  }
}

int Supervisor::run() {
  auto all_reaped = [&] {
    return std::all_of(ranks_.begin(), ranks_.end(),
                       [](const RankProcess& r) { return r.process.reaped(); });
  };
  while (!all_reaped()) {
    mux_.poll_once(phase_deadline_.remaining_ms(kReapIntervalMs), signals_.fd());
    for (int sig : signals_.take()) on_signal(sig);
    if (silent_ != nullptr)
      for (const SilentRank& silent : silent_->take()) on_silent(silent);
    for (RankProcess& r : ranks_) {
      if (r.process.reaped()) continue;
      if (auto status = r.process.try_reap()) on_exit(r, *status);
    }
    if (growth_ != nullptr && phase_ == Phase::kRunning && !all_reaped()) {
      try {
        growth_->tick();  // may append to ranks_: no reference into it is held here
      } catch (const Error& e) {
        say(fmt::format("tuttirun: growing the job failed: {}; stopping it", e.what()));
        if (!exit_code_) exit_code_ = 1;
        enter(Phase::kGrace, options_.grace_seconds);
      }
    }
    if (below_min_until_ && phase_ == Phase::kRunning) check_below_min();
    if (!all_reaped() && phase_deadline_.expired()) escalate();
  }
  // Whatever the ranks started themselves must not outlive the job.
  if (!backend_.finish_job(Deadline::after_seconds(kKillWaitSeconds)))
    say("tuttirun: processes started by the ranks survived SIGKILL for 10s; check with ps for "
        "leftovers");
  size_t cut = mux_.drain(Deadline::after_seconds(kDrainSeconds));
  if (cut > 0)
    log::warn("tuttirun: {} output stream(s) were still open after every rank exited; closed them",
              cut);
  std::string summary = failure_summary(failed_, static_cast<int>(ranks_.size()));
  if (!summary.empty())
    say(went_on_ && !exit_code_
            ? summary +
                  fmt::format(" (the others went on without them: --min-np {})", options_.min_ranks)
            : summary);
  return exit_code_.value_or(0);
}

}  // namespace tutti::launcher
