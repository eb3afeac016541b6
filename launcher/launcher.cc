#include "launcher/launcher.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include "bootstrap/tcp_store.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "launcher/exec_backend.hpp"
#include "launcher/job_env.hpp"
#include "launcher/output_mux.hpp"
#include "launcher/plan.hpp"
#include "launcher/shm_cleanup.hpp"
#include "launcher/signal_watcher.hpp"
#include "launcher/supervisor.hpp"

namespace tutti::launcher {
namespace {

// Removes the job's leftover shared memory on every way out of run_job, after the ranks are gone.
class SegmentSweep {
 public:
  explicit SegmentSweep(std::string job_id) : job_id_(std::move(job_id)) {}
  ~SegmentSweep() {
    size_t n = remove_job_segments(job_id_);
    if (n > 0)
      log::info("tuttirun: removed {} leftover /dev/shm/tutti-{}-* segment(s)", n, job_id_);
  }
  SegmentSweep(const SegmentSweep&) = delete;
  SegmentSweep& operator=(const SegmentSweep&) = delete;

 private:
  std::string job_id_;
};

void print_error(const std::string& message) {
  FdSink(STDOUT_FILENO, STDERR_FILENO).write(Stream::kStderr, message + "\n");
}

}  // namespace

int run_job(const LaunchOptions& options) {
  if (options.verbose && !log::enabled(log::Level::kInfo)) log::set_threshold(log::Level::kInfo);
  // A reader of tuttirun's output that goes away must not kill tuttirun before it stops the job.
  ::signal(SIGPIPE, SIG_IGN);

  Environment base = Environment::from_process();
  std::vector<std::string> unset;
  std::vector<EnvExport> exports;
  try {
    exports = resolve_exports(options.exports, base, &unset);
  } catch (const Error& e) {
    print_error(e.what());
    return kExitUsage;
  }
  for (const std::string& name : unset)
    log::warn("tuttirun: -x {}: not set in tuttirun's environment; not passed on", name);

  std::unique_ptr<ExecBackend> backend = make_local_backend();
  Environment command_env = base;
  for (const EnvExport& e : exports) command_env.set(e.name, e.value);
  if (std::string problem = backend->check_command(options.command, command_env);
      !problem.empty()) {
    print_error(problem);
    return kExitCommandNotFound;
  }

  JobPlan plan = plan_local(options.np);
  // Installed before the first fork so that neither SIGCHLD nor Ctrl-C during startup is lost.
  SignalWatcher signals;
  JobIdentity job =
      make_job_identity(env::raw("TUTTI_JOB_TOKEN"), options.job_id, "", options.timeout);
  SegmentSweep sweep(job.job_id);
  bootstrap::TcpStoreServer store("127.0.0.1", options.store_port, job.job_token);
  job.store_address = fmt::format("127.0.0.1:{}", store.port());
  log::info("tuttirun: job {} with {} ranks; store at {}; command {}", job.job_id,
            plan.world_size(), job.store_address, fmt::join(options.command, " "));

  FdSink sink(STDOUT_FILENO, STDERR_FILENO);
  OutputMux mux(sink, options.tag_output);
  std::vector<RankProcess> ranks;
  ranks.reserve(plan.slots.size());
  for (const RankSlot& slot : plan.slots) {
    Environment env = rank_environment(base, exports, slot, plan.world_size(), job);
    try {
      ranks.push_back(RankProcess{slot, backend->start(slot, options.command, env)});
    } catch (const Error& e) {
      // The ranks already started are killed and reaped by their destructors and the backend's.
      print_error(fmt::format("tuttirun: could not start rank {}: {}", slot.rank, e.what()));
      backend->signal_job(SIGKILL);
      return 1;
    }
    ChildProcess& p = ranks.back().process;
    log::info("tuttirun: started rank {} as pid {}", slot.rank, p.pid());
    mux.add(slot.rank, Stream::kStdout, p.take_stdout());
    mux.add(slot.rank, Stream::kStderr, p.take_stderr());
  }

  Supervisor supervisor(ranks, *backend, mux, signals,
                        SupervisorOptions{options.grace_seconds, options.verbose});
  return supervisor.run();
}

}  // namespace tutti::launcher
