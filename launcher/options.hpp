// tuttirun's command line: what the user asked for, before anything is planned or started.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "launcher/exec_kind.hpp"
#include "launcher/host_source.hpp"

namespace tutti::launcher {

// Exit codes that follow shell conventions so scripts can tell a usage error from a failed job.
inline constexpr int kExitUsage = 2;
inline constexpr int kExitHostsUnreachable = 3;
inline constexpr int kExitCommandNotFound = 127;
// The most ranks one job may have (the runtime's TUTTI_SIZE bound).
inline constexpr int64_t kMaxRanks = 1 << 20;

// --hang-timeout's default in jobs that outlive a failed rank (--min-np): well under a minute, so
// that a stopped rank costs the survivors seconds, and ten heartbeats long, so that a busy one is
// never taken for it.
constexpr double kDefaultHangTimeoutSeconds = 10.0;
// The shortest --hang-timeout (other than 0, off): two heartbeats.
constexpr double kMinHangTimeoutSeconds = 2.0;

struct LaunchOptions {
  int np = 0;  // 0: not given (every slot of the hosts)
  HostOptions hosts;
  std::optional<ExecKind> exec;  // --exec; nullopt: chosen from the hosts
  std::string kubexec;           // empty: kubexec next to tuttirun, else on PATH
  std::string ssh = "ssh";
  std::string remote_tuttirun;  // empty: this tuttirun's absolute path
  double probe_timeout_seconds = 120.0;
  std::string store_addr;  // empty: the address on the route to the first host
  // --store etcd://...: the job's keys in that etcd instead of tuttirun's own TcpStore.
  std::string store_url;
  std::string output_dir;  // empty: output only to the terminal
  int restarts = 0;
  int min_np = 0;  // --min-np: 0 stops the job at the first failure
  // Elastic growth (docs/ELASTIC.md): hosts come from this script, polled every
  // discovery_interval_seconds; new slots get ranks up to max_np (0: no bound).
  std::string host_discovery_script;
  std::string pods_selector;  // --pods-selector: the script becomes kubectl get pods -l SELECTOR
  int max_np = 0;
  double discovery_interval_seconds = 1.0;
  int blacklist_after = 1;
  // Below --min-np an elastic job waits this long for hosts before it stops.
  double elastic_timeout_seconds = 600.0;
  // --hang-timeout: a rank whose heartbeat stops this long (stopped, hung in the kernel) is killed
  // and counts as failed. Unset: kDefaultHangTimeoutSeconds with --min-np, else off (0).
  std::optional<double> hang_timeout_seconds;
  double restart_backoff_seconds = 10.0;
  bool mpirun = false;
  std::string mpirun_path = "mpirun";
  bool dry_run = false;
  std::optional<std::string> timeout;  // passed on to ranks as TUTTI_TIMEOUT, already validated
  double grace_seconds = 5.0;
  bool tag_output = true;
  std::vector<std::string> exports;  // -x VAR or -x VAR=VALUE, in command-line order
  std::string job_id;                // empty: tuttirun makes one up
  uint16_t store_port = 0;           // 0: any free port
  bool verbose = false;
  std::vector<std::string> command;  // the program and its arguments, never empty
};

// Either options to run with, or an immediate exit (help, version, usage error) with its text.
struct ParseResult {
  std::optional<LaunchOptions> options;
  int exit_code = 0;
  std::string message;  // for stdout when exit_code is 0, for stderr otherwise

  bool should_run() const { return options.has_value(); }
};

// args excludes argv[0]. Never throws for bad user input: that becomes exit code kExitUsage.
ParseResult parse_options(std::span<const std::string> args);

// Where tuttirun's own options end and the rank command begins: the index of the first argument
// that is neither an option nor an option's value (past a "--" when there is one).
size_t command_start(std::span<const std::string> args, bool* saw_double_dash);

// Job ids end up in store keys and /dev/shm names, so they are restricted to [A-Za-z0-9._-].
bool valid_job_id(const std::string& id);

std::string version_text();

}  // namespace tutti::launcher
