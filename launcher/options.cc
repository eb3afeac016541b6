#include "launcher/options.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <sstream>
#include <string_view>

#include "bootstrap/etcd_client.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "hostfile/hostfile.hpp"
#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

// Options that consume the next argument unless written as --opt=value. Needed to find where the
// rank command starts without letting CLI11 swallow the command's own options.
constexpr std::array kValueOptions = std::to_array<std::string_view>({"-np",
                                                                      "-n",
                                                                      "--np",
                                                                      "--timeout",
                                                                      "--grace",
                                                                      "-x",
                                                                      "--job-id",
                                                                      "--store-port",
                                                                      "--hostfile",
                                                                      "--machinefile",
                                                                      "-H",
                                                                      "--host",
                                                                      "--pods",
                                                                      "--pods-file",
                                                                      "--slots",
                                                                      "--exec",
                                                                      "--kubexec",
                                                                      "--ssh",
                                                                      "--remote-tuttirun",
                                                                      "--probe-timeout",
                                                                      "--store-addr",
                                                                      "--output-dir",
                                                                      "--restarts",
                                                                      "--restart-backoff",
                                                                      "--mpirun-path",
                                                                      "--min-np",
                                                                      "--host-discovery-script",
                                                                      "--max-np",
                                                                      "--discovery-interval",
                                                                      "--blacklist-after",
                                                                      "--pods-selector",
                                                                      "--store",
                                                                      "--elastic-timeout",
                                                                      "--hang-timeout"});

bool takes_value(std::string_view arg) {
  return std::find(kValueOptions.begin(), kValueOptions.end(), arg) != kValueOptions.end();
}

ParseResult usage_error(std::string message) {
  return ParseResult{std::nullopt, kExitUsage,
                     fmt::format("tuttirun: {}\nRun 'tuttirun --help' for usage.\n", message)};
}

constexpr std::string_view kDescription =
    "tuttirun: start the ranks of a tutti program on this host or on remote hosts and pods, serve\n"
    "their rendezvous store, tag their output with [rank], and stop the whole job when one rank\n"
    "fails. Inside an MPIJob launcher pod the hosts come from /etc/mpi/hostfile by themselves;\n"
    "inside a Slurm allocation (salloc, sbatch) from the allocation, each rank a task of it.\n"
    "Ranks also get RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and\n"
    "MASTER_PORT, so PyTorch scripts (init_process_group(\"env://\")) run without torchrun.\n";

constexpr std::string_view kUsage =
    "Usage: tuttirun -np N [options] [--] COMMAND [ARGS...]            (this host)\n"
    "       tuttirun --pods a,b,c [--slots S] [options] [--] COMMAND    (Kubernetes pods)\n"
    "       tuttirun --hostfile F | -H h1:2,h2:2 [options] [--] COMMAND (hosts, via ssh)\n"
    "       salloc -n N tuttirun [options] [--] COMMAND                 (Slurm: tasks of the "
    "allocation)";

constexpr std::string_view kFooter =
    "\nExamples:\n"
    "  tuttirun -np 4 ./train                          4 ranks on this host\n"
    "  tuttirun -H node1:8,node2:8 -- python3 train.py  16 ranks on two hosts, started over ssh\n"
    "  tuttirun --pods worker-0,worker-1 --slots 2 ./train\n"
    "                                                  4 ranks in two pods (through kubexec)\n"
    "  salloc -N 2 -n 8 tuttirun ./train               8 ranks, each a task of the allocation\n"
    "  tuttirun -np 4 --min-np 2 ./train               elastic: go on while 2 ranks are left\n"
    "  tuttirun -np 8 --dry-run ./train                print the plan, start nothing\n"
    "\nExit status: 0 when every rank succeeded; else the first failed rank's status (128+N when\n"
    "killed by signal N); 1 when tuttirun itself failed; 2 for a usage error; 3 when hosts never\n"
    "became reachable; 127 when the command is not found (local mode); 128+N when tuttirun was\n"
    "interrupted by signal N. Settings the ranks read (TUTTI_*): docs/ENVIRONMENT.md.\n";

// Help within 100 columns: CLI11 2.1 prints each description on one line however long.
constexpr size_t kHelpWidth = 100;
constexpr size_t kDescriptionColumn = 30;

// `text` in lines of at most `width` characters, broken at spaces.
std::vector<std::string> wrapped(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// CLI11 2.1 would print "Usage: tuttirun [OPTIONS]"; tuttirun's three forms say more.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return std::string(kUsage) + "\n";
  }
  std::string make_option(const CLI::Option* opt, bool positional) const override {
    std::string left = "  " + make_option_name(opt, positional) + make_option_opts(opt);
    std::vector<std::string> lines =
        wrapped(make_option_desc(opt), kHelpWidth - kDescriptionColumn);
    std::string out;
    size_t first = 0;
    if (left.size() + 2 <= kDescriptionColumn && !lines.empty()) {
      out = left + std::string(kDescriptionColumn - left.size(), ' ') + lines[0] + "\n";
      first = 1;
    } else {
      out = left + "\n";
    }
    for (size_t i = first; i < lines.size(); ++i)
      out += std::string(kDescriptionColumn, ' ') + lines[i] + "\n";
    return out;
  }
};

}  // namespace

std::string version_text() {
  return fmt::format("tuttirun (tutti) {}\n", TUTTI_VERSION);
}

bool valid_job_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

size_t command_start(std::span<const std::string> args, bool* saw_double_dash) {
  *saw_double_dash = false;
  size_t i = 0;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--") {
      *saw_double_dash = true;
      return i + 1;
    }
    if (a.empty() || a[0] != '-' || a == "-") return i;
    i += takes_value(a) ? 2 : 1;
  }
  return std::min(i, args.size());
}

std::string pods_selector_script(const std::string& selector, int slots) {
  // The selector holds only [A-Za-z0-9=,._/-] (checked), so it needs no quoting. The kubectl and
  // namespace are kubexec's, read when the script runs.
  std::string script = fmt::format(
      "\"${{KUBEXEC_KUBECTL:-kubectl}}\" get pods ${{KUBEXEC_NAMESPACE:+-n "
      "\"$KUBEXEC_NAMESPACE\"}} "
      "-l {} --field-selector=status.phase=Running "
      "-o jsonpath='{{range .items[*]}}{{.metadata.name}}{{\"\\n\"}}{{end}}'",
      selector);
  if (slots > 1) script += fmt::format(" | sed 's/$/:{}/'", slots);
  return script;
}

ParseResult parse_options(std::span<const std::string> args) {
  bool double_dash = false;
  size_t start = command_start(args, &double_dash);
  size_t options_end = double_dash ? start - 1 : start;

  // CLI11 wants its arguments in reverse order. mpirun's single-dash -np becomes --np.
  std::vector<std::string> reversed;
  for (size_t i = options_end; i-- > 0;) reversed.push_back(args[i] == "-np" ? "--np" : args[i]);

  LaunchOptions opts;
  std::string timeout_text;
  std::string grace_text = "5";
  // Numbers are taken as text and read by tutti::parse, the one checked parser (ranges, overflow).
  std::string np_text, slots_text, restarts_text = "0", store_port_text = "0", min_np_text;
  std::string max_np_text, interval_text = "1", blacklist_text = "1";
  std::string probe_text = "120";
  std::string backoff_text = "10";
  std::string exec_text;
  std::vector<std::string> exec_names;
  for (ExecKind kind : kExecKinds) exec_names.emplace_back(exec_name(kind));
  bool help = false;
  bool version = false;

  CLI::App app{std::string(kDescription), "tuttirun"};
  app.footer(std::string(kFooter));
  app.formatter(std::make_shared<UsageFormatter>());
  app.set_help_flag();  // handled below so --help works even without -np
  app.add_flag("-h,--help", help, "Print this help and exit");
  app.add_flag("--version", version, "Print the version and exit");
  app.add_option("-n,--np", np_text,
                 "Number of ranks (-np N also works). Default: every slot of the hosts; required "
                 "without hosts")
      ->type_name("N");
  app.add_option("--hostfile,--machinefile", opts.hosts.hostfile,
                 "Hosts from a file: 'host slots=N' (Open MPI), 'host:N' (MPICH/Intel) or 'host'")
      ->type_name("FILE");
  app.add_option("-H,--host", opts.hosts.host_list, "Hosts as host[:slots],...")
      ->type_name("HOST[:SLOTS],...");
  app.add_option("--pods", opts.hosts.pods, "Kubernetes pod names, comma separated")
      ->type_name("POD,...");
  app.add_option("--pods-file", opts.hosts.pods_file,
                 "Pod names from a file (one per line; 'kubectl get pods -o name' output works)")
      ->type_name("FILE");
  app.add_option("--slots", slots_text,
                 "Slots per host for --pods and for -H entries without :N (default 1)")
      ->type_name("N");
  app.add_option("--exec", exec_text,
                 "How ranks start: local, ssh, kubexec or srun. Default: srun in a Slurm "
                 "allocation; local when every host is this host; kubexec for pods and "
                 "kubexec-style MPIJobs; ssh otherwise")
      ->type_name("HOW")
      ->check(CLI::IsMember(exec_names));
  app.add_option("--kubexec", opts.kubexec,
                 "The kubexec shim (default: kubexec beside tuttirun, else on PATH); it reads "
                 "KUBEXEC_NAMESPACE, KUBEXEC_CONTAINER, ... from this environment")
      ->type_name("PATH");
  app.add_option("--ssh", opts.ssh,
                 "ssh program (default ssh; run with BatchMode and a 10s "
                 "connect timeout)")
      ->type_name("PROGRAM");
  app.add_option("--remote-tuttirun", opts.remote_tuttirun,
                 "tuttirun's path on the hosts, which runs each remote rank (default: this "
                 "tuttirun's path)")
      ->type_name("PATH");
  app.add_option("--probe-timeout", probe_text,
                 "Before launch, wait this long for every host to answer (default 120s; 0 skips "
                 "the wait)")
      ->type_name("SECONDS");
  app.add_option("--store-addr", opts.store_addr,
                 "Address the ranks dial for the rendezvous store (default: this machine's address "
                 "on the route to the first host)")
      ->type_name("ADDR");
  app.add_option(
         "--store", opts.store_url,
         "etcd://HOST:PORT[,HOST:PORT][/PREFIX]: keep the job's rendezvous keys in that etcd "
         "(v3.4+) instead of a store tuttirun serves, under PREFIX/JOB-ID/ATTEMPT, removed "
         "when the job ends (docs/ELASTIC.md)")
      ->type_name("URL");
  app.add_option("--output-dir", opts.output_dir,
                 "Also write each rank's output to DIR/rank.N/stdout and DIR/rank.N/stderr")
      ->type_name("DIR");
  app.add_option("--restarts", restarts_text,
                 "Relaunch the whole job after a failure, up to K times (default 0); ranks read "
                 "the attempt from TUTTI_RESTART_COUNT")
      ->type_name("K");
  app.add_option("--restart-backoff", backoff_text, "Seconds between attempts (default 10)")
      ->type_name("SECONDS");
  app.add_option("--min-np", min_np_text,
                 "Elastic: a failed rank does not stop the job while at least N ranks still run; "
                 "the survivors go on (Communicator::shrink, docs/ELASTIC.md). Exit status 0 when "
                 "every rank that ran to the end succeeded. Default: the job stops at the first "
                 "failure")
      ->type_name("N");
  app.add_option("--host-discovery-script", opts.host_discovery_script,
                 "Elastic: hosts come from this script (run with sh -c), which prints one "
                 "host:slots (or host) per line; it runs again every --discovery-interval, and "
                 "free slots get new ranks that join the running job at its next elastic commit "
                 "(tutti::elastic::run). Instead of --hostfile/-H/--pods")
      ->type_name("SCRIPT");
  app.add_option("--pods-selector", opts.pods_selector,
                 "Elastic: the hosts are the Running pods with these labels (k=v,k=v; kubectl get "
                 "pods -l, with KUBEXEC_KUBECTL and KUBEXEC_NAMESPACE as kubexec reads them), "
                 "--slots each (default 1), polled like --host-discovery-script; ranks start "
                 "through kubexec")
      ->type_name("K=V,...");
  app.add_option("--max-np", max_np_text,
                 "Elastic: at most N ranks at once (default: as many as the hosts' slots)")
      ->type_name("N");
  app.add_option("--discovery-interval", interval_text,
                 "Elastic: seconds between runs of the discovery script (default 1)")
      ->type_name("SECONDS");
  app.add_option("--blacklist-after", blacklist_text,
                 "Elastic: a host whose ranks failed K times gets no new ranks (default 1)")
      ->type_name("K");
  std::string elastic_timeout_text = "600";
  app.add_option(
         "--elastic-timeout", elastic_timeout_text,
         "Elastic: when deaths leave fewer than --min-np ranks, wait this long (seconds, "
         "default 600) for the discovery script to give hosts for new ranks before stopping "
         "the job; the survivors wait in elastic::run")
      ->type_name("SECONDS");
  std::string hang_timeout_text;
  app.add_option(
         "--hang-timeout", hang_timeout_text,
         fmt::format(
             "Seconds a rank's heartbeat (one a second, from a thread of its own) may stop "
             "before tuttirun takes the rank for stopped or hung, kills it and counts it as "
             "failed, so that the survivors of an elastic job shrink it away (default {:g} "
             "with --min-np, else 0: off; at least 2; ranks started into tuttirun's own store)",
             kDefaultHangTimeoutSeconds))
      ->type_name("SECONDS");
  app.add_flag("--mpirun", opts.mpirun,
               "Hand the job to Open MPI's mpirun with a hostfile and kubexec/ssh as its remote "
               "shell");
  app.add_option("--mpirun-path", opts.mpirun_path, "mpirun to run with --mpirun (default mpirun)")
      ->type_name("PATH");
  app.add_flag("--dry-run", opts.dry_run, "Print the plan (ranks, hosts, store) and start nothing");
  app.add_option("--timeout", timeout_text,
                 "Init deadline for the ranks, passed on as TUTTI_TIMEOUT (e.g. 30, 2.5s, 5m)")
      ->type_name("SECONDS");
  app.add_option(
         "--grace", grace_text,
         "After the first failure: seconds the other ranks get to exit by themselves before "
         "SIGTERM, and again before SIGKILL (default 5)")
      ->type_name("SECONDS");
  app.add_flag("--tag-output,!--no-tag-output", opts.tag_output,
               "Prefix each output line with [rank] (default on)");
  app.add_option("-x", opts.exports,
                 "VAR or VAR=VALUE: pass VAR from this environment, or set it, for every rank "
                 "(repeatable)")
      ->type_name("VAR[=VALUE]")
      ->allow_extra_args(false);
  app.add_option("--job-id", opts.job_id, "Job name (default tuttirun-<random>)")
      ->type_name("NAME");
  app.add_option("--store-port", store_port_text,
                 "Port of the rendezvous store (default: any free port)")
      ->type_name("PORT");
  app.add_flag("--verbose", opts.verbose, "Say what tuttirun does");

  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (help) return ParseResult{std::nullopt, 0, app.help()};
  if (version) return ParseResult{std::nullopt, 0, version_text()};
  if (!exec_text.empty()) opts.exec = parse_exec_kind(exec_text);  // IsMember checked the name

  const HostOptions& h = opts.hosts;
  bool hosts_given = !h.hostfile.empty() || !h.host_list.empty() || !h.pods.empty() ||
                     !h.pods_file.empty() || !opts.host_discovery_script.empty() ||
                     !opts.pods_selector.empty();
  if (app.count("--np") == 0 && !hosts_given &&
      !mpijob_hostfile(env::process_value,
                       [](const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }) &&
      !in_slurm_allocation(env::process_value))
    return usage_error(
        "-np N is required (the number of ranks to start) unless hosts are given (--hostfile, "
        "-H, --pods) or tuttirun runs in a Slurm allocation (salloc, sbatch)");
  try {
    if (app.count("--np") > 0)
      opts.np = static_cast<int>(parse::integer(np_text, "-np", 1, kMaxRanks));
    // 0 is refused, not taken as "not given" (HostOptions' 0).
    if (app.count("--slots") > 0)
      opts.hosts.slots =
          static_cast<int>(parse::integer(slots_text, "--slots", 1, hostfile::kMaxSlots));
    opts.restarts = static_cast<int>(parse::integer(restarts_text, "--restarts", 0, 1000000));
    if (app.count("--min-np") > 0)
      opts.min_np = static_cast<int>(parse::integer(min_np_text, "--min-np", 1, kMaxRanks));
    if (app.count("--max-np") > 0)
      opts.max_np = static_cast<int>(parse::integer(max_np_text, "--max-np", 1, kMaxRanks));
    opts.discovery_interval_seconds = parse::seconds(interval_text, "--discovery-interval", 0.01);
    opts.elastic_timeout_seconds = parse::seconds(elastic_timeout_text, "--elastic-timeout", 0.001);
    opts.blacklist_after =
        static_cast<int>(parse::integer(blacklist_text, "--blacklist-after", 1, 1000000));
    opts.store_port =
        static_cast<uint16_t>(parse::integer(store_port_text, "--store-port", 0, 65535));
    opts.probe_timeout_seconds = parse::seconds(probe_text, "--probe-timeout");
    opts.restart_backoff_seconds = parse::seconds(backoff_text, "--restart-backoff");
    opts.grace_seconds = parse::seconds(grace_text, "--grace");
    if (app.count("--hang-timeout") > 0) {
      opts.hang_timeout_seconds = parse::seconds(hang_timeout_text, "--hang-timeout");
      // Ranks beat once a second: a shorter silence is no sign of a hang, and would kill them all.
      if (*opts.hang_timeout_seconds > 0 && *opts.hang_timeout_seconds < kMinHangTimeoutSeconds)
        return usage_error(fmt::format(
            "--hang-timeout {} is shorter than {:g} s: ranks send a heartbeat once a second, so "
            "a busy rank would be taken for a hung one (0 turns the watch off)",
            hang_timeout_text, kMinHangTimeoutSeconds));
    }
    if (app.count("--timeout") > 0) {
      // The ranks' init deadline: 0 is refused (with a hint) as it is for TUTTI_TIMEOUT.
      parse::seconds(timeout_text, "--timeout", 0.001);
      opts.timeout = timeout_text;
    }
  } catch (const Error& e) {
    return usage_error(e.what());
  }
  if (!opts.store_url.empty()) {
    try {
      bootstrap::parse_etcd_address(opts.store_url, "--store");
    } catch (const Error& e) {
      return usage_error(e.what());
    }
    for (const char* option : {"--store-addr", "--store-port"})
      if (app.count(option) > 0)
        return usage_error(fmt::format(
            "{} is for the store tuttirun serves; with --store the ranks meet in etcd", option));
    if (opts.mpirun)
      return usage_error(
          "--store cannot go with --mpirun: the ranks mpirun starts meet through MPI; set "
          "-x TUTTI_STORE=etcd://... to make them meet in etcd");
  }
  if (app.count("--job-id") > 0 && !valid_job_id(opts.job_id))
    return usage_error(fmt::format(
        "--job-id '{}' may only contain letters, digits, '.', '_' and '-' (at most 128)",
        opts.job_id));
  if (opts.min_np > 0 && opts.np > 0 && opts.min_np > opts.np)
    return usage_error(
        fmt::format("--min-np {} is more than -np {}: the job could never go on "
                    "after a failure",
                    opts.min_np, opts.np));
  if (!opts.pods_selector.empty()) {
    if (!opts.host_discovery_script.empty())
      return usage_error(
          "--pods-selector and --host-discovery-script both say where hosts come from; give one");
    const bool plain =
        std::all_of(opts.pods_selector.begin(), opts.pods_selector.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("=,.-_/", c) != nullptr;
        });
    if (!plain || opts.pods_selector.find('=') == std::string::npos)
      return usage_error(
          fmt::format("--pods-selector '{}' is not a label selector of k=v pairs (k=v,k2=v2)",
                      opts.pods_selector));
    opts.host_discovery_script = pods_selector_script(opts.pods_selector, opts.hosts.slots);
    opts.hosts.slots = 0;  // given to the script; --slots with no hosts of its own
    if (!opts.exec) opts.exec = ExecKind::kKubexec;
  }
  const bool elastic = !opts.host_discovery_script.empty();
  if (!elastic) {
    for (const char* option :
         {"--max-np", "--discovery-interval", "--blacklist-after", "--elastic-timeout"})
      if (app.count(option) > 0)
        return usage_error(fmt::format(
            "{} needs --host-discovery-script: it is what says which hosts new ranks can go to",
            option));
  } else {
    if (!opts.hosts.hostfile.empty() || !opts.hosts.host_list.empty() || !opts.hosts.pods.empty() ||
        !opts.hosts.pods_file.empty())
      return usage_error(
          "--host-discovery-script gives the hosts; drop --hostfile, -H, --pods and --pods-file");
    if (opts.mpirun)
      return usage_error("--host-discovery-script cannot go with --mpirun: mpirun's job is fixed");
    if (opts.pods_selector.empty() && app.count("--slots") > 0)
      return usage_error(
          "--slots goes with --pods-selector; a discovery script says each host's slots itself "
          "(host:slots)");
    if (opts.max_np > 0 && opts.np > opts.max_np)
      return usage_error(fmt::format("-np {} is more than --max-np {}", opts.np, opts.max_np));
    if (opts.max_np > 0 && opts.min_np > opts.max_np)
      return usage_error(
          fmt::format("--min-np {} is more than --max-np {}", opts.min_np, opts.max_np));
  }
  if (opts.min_np > 0 && opts.mpirun)
    return usage_error(
        "--min-np cannot go with --mpirun: mpirun stops the whole job when a rank "
        "fails");
  for (const std::string& x : opts.exports) {
    std::string_view name = std::string_view(x).substr(0, x.find('='));
    if (name.empty())
      return usage_error(fmt::format("-x '{}' names no variable; write -x VAR or -x VAR=VALUE", x));
  }

  if (start >= args.size())
    return usage_error("no command given; write tuttirun -np N COMMAND [ARGS...]");
  opts.command.assign(args.begin() + static_cast<std::ptrdiff_t>(start), args.end());
  return ParseResult{std::move(opts), 0, ""};
}

}  // namespace tutti::launcher
