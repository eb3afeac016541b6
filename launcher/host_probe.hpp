// Waiting for the hosts before launch. In an MPIJob the launcher pod often starts before the worker
// pods run (image pull, scheduling, DNS); starting ranks then fails in confusing ways. tuttirun
// instead runs `tuttirun --version` on every host through the exec backend until each one answers
// (which also shows the rank agent can run there), shows who it still waits for and why, and gives
// up at a deadline with the list of hosts that never came.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/exec_backend.hpp"
#include "launcher/output_sink.hpp"
#include "launcher/signal_watcher.hpp"

namespace tutti::launcher {

struct UnreachableHost {
  std::string host;
  std::string reason;  // the probe's last stderr line, or how it ended
};

struct ProbeResult {
  std::vector<UnreachableHost> unreachable;  // empty: every host answered
  // Set when a probe exited 127 (command not found): waiting longer cannot help, so the probe
  // stops at once; `unreachable` then holds that host.
  bool hopeless = false;
  std::optional<int> interrupted_by;  // SIGINT/SIGTERM/SIGHUP to tuttirun while waiting
};

// At most this many probes run at once, so that 100 pods do not mean 100 kubectl processes.
inline constexpr size_t kMaxConcurrentProbes = 16;

ProbeResult probe_hosts(ExecBackend& backend, const std::vector<std::string>& hosts,
                        double timeout_seconds, OutputSink& progress, SignalWatcher& signals);

// "job-worker-2 (not running), job-worker-3 (...)" with at most `limit` hosts named.
std::string describe_hosts(const std::vector<UnreachableHost>& hosts, size_t limit);

}  // namespace tutti::launcher
