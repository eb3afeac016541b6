#include "launcher/launcher.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "bootstrap/tcp_store.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "launcher/elastic_growth.hpp"
#include "launcher/etcd_job_keys.hpp"
#include "launcher/exec_backend.hpp"
#include "launcher/exec_kind.hpp"
#include "launcher/host_discovery.hpp"
#include "launcher/host_probe.hpp"
#include "launcher/job_env.hpp"
#include "launcher/launch_limits.hpp"
#include "launcher/local_host.hpp"
#include "launcher/mpirun_runner.hpp"
#include "launcher/output_mux.hpp"
#include "launcher/plan.hpp"
#include "launcher/shm_cleanup.hpp"
#include "launcher/signal_watcher.hpp"
#include "launcher/silent_ranks.hpp"
#include "launcher/slurm_binding.hpp"
#include "launcher/supervisor.hpp"
#include "launcher/torch_env.hpp"
#include "net/host_interfaces.hpp"
#include "net/socket.hpp"

namespace tutti::launcher {
namespace {

// Removes the job's leftover shared memory on every way out of an attempt, after the ranks are
// gone.
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

std::string own_executable() {
  char path[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "tuttirun";
}

std::string current_directory() {
  char path[PATH_MAX] = {};
  return ::getcwd(path, sizeof path) != nullptr ? path : "";
}

// kubexec installed beside tuttirun (the same package), else the one on PATH.
std::string default_kubexec() {
  std::string self = own_executable();
  std::string beside = self.substr(0, self.find_last_of('/') + 1) + "kubexec";
  return ::access(beside.c_str(), X_OK) == 0 ? beside : "kubexec";
}

bool all_hosts_local(const JobPlan& plan) {
  for (const std::string& h : plan.hosts())
    if (!is_this_host(h)) return false;
  return true;
}

// --exec, or what fits where the hosts came from.
ExecKind choose_exec(const LaunchOptions& options, const HostSelection& hosts,
                     const JobPlan& plan) {
  if (options.exec) {
    if (*options.exec == ExecKind::kSrun && hosts.origin != HostOrigin::kSlurm)
      throw make_error(ErrorCode::kConfig,
                       "--exec srun starts ranks as tasks of a Slurm allocation, and tuttirun "
                       "runs in none here (no SLURM_JOB_ID and SLURM_JOB_NODELIST, or hosts were "
                       "given); run it inside salloc or sbatch without host options");
    if (*options.exec == ExecKind::kLocal)
      for (const std::string& h : plan.hosts())
        if (!is_this_host(h))
          throw make_error(ErrorCode::kConfig,
                           "--exec local starts ranks on this host only, but the plan puts ranks "
                           "on {}; use --exec ssh or --exec kubexec",
                           h);
    return *options.exec;
  }
  // Ranks in an allocation run as its tasks, this node's too: Slurm then accounts, signals and
  // cleans them as it does srun's.
  if (hosts.origin == HostOrigin::kSlurm) return ExecKind::kSrun;
  if (all_hosts_local(plan)) return ExecKind::kLocal;
  switch (hosts.origin) {
    case HostOrigin::kPods:
      return ExecKind::kKubexec;
    case HostOrigin::kMpiJob:
      // v1 MPIJobs give mpirun a kubexec script as its remote shell; v2beta1 ones use ssh.
      return hosts.mpijob_agent.find("kubexec") != std::string::npos ? ExecKind::kKubexec
                                                                     : ExecKind::kSsh;
    default:
      return ExecKind::kSsh;
  }
}

// The store address the ranks dial and the one the server binds.
// The backend could not start a rank (as opposed to what goes wrong around it, such as
// --output-dir).
struct StartFailed : Error {
  explicit StartFailed(const Error& e) : Error(e) {}
};

struct StoreEndpoint {
  std::string dial;
  std::string bind;
};

// Every address of the dial address's family (an IPv6 store listens on "::").
std::string any_address_like(const std::string& dial) {
  return dial.find(':') != std::string::npos ? "::" : "0.0.0.0";
}

// --store-addr wins; then, for remote ranks, the interface TUTTI_SOCKET_IFNAME selects (the
// ranks' own rule, net/host_interfaces.hpp), the address on the route to the first host, the
// default route's.
StoreEndpoint choose_store(const LaunchOptions& options, const JobPlan& plan, bool remote,
                           const Environment& launcher_env) {
  const std::string given = net::bare_host(options.store_addr);
  if (!remote)
    return given.empty() ? StoreEndpoint{"127.0.0.1", "127.0.0.1"} : StoreEndpoint{given, given};
  if (!given.empty()) return {given, any_address_like(given)};
  if (auto pattern = launcher_env.get("TUTTI_SOCKET_IFNAME"); pattern && !pattern->empty()) {
    std::string a = net::select_interface_address(*pattern, "the store's address", "--store-addr");
    return {a, any_address_like(a)};
  }
  const std::string& first = plan.slots.front().host;
  if (auto a = address_on_route_to(first)) return {*a, any_address_like(*a)};
  if (auto a = default_route_address()) {
    log::info(
        "tuttirun: {} does not resolve here; the store is at this machine's default-route "
        "address {}",
        first, *a);
    return {*a, "0.0.0.0"};
  }
  throw make_error(ErrorCode::kConfig,
                   "cannot tell which address of this machine the ranks can reach: {} does not "
                   "resolve and there is no default route; pass --store-addr ADDRESS or set "
                   "TUTTI_SOCKET_IFNAME",
                   first);
}

// What a remote rank starts from: only TUTTI_* settings and -x exports travel, as with mpirun; the
// host's own environment (PATH, HOME, KUBERNETES_*) is the base the agent adds them to.
Environment remote_base(const Environment& launcher_env) {
  Environment base;
  for (const std::string& entry : launcher_env.to_strings())
    if (entry.starts_with("TUTTI_")) {
      size_t eq = entry.find('=');
      base.set(entry.substr(0, eq), entry.substr(eq + 1));
    }
  return base;
}

// `store_url`: --store's etcd, else the store tuttirun serves at `store`.
void print_plan(const JobPlan& plan, ExecKind exec, const StoreEndpoint& store,
                const std::string& store_url, const std::vector<std::string>& command) {
  const std::string where =
      !store_url.empty()
          ? store_url + " (under <job-id>/a<attempt>)"
          : fmt::format("{}:<port chosen at launch>", store.dial.find(':') != std::string::npos
                                                          ? "[" + store.dial + "]"
                                                          : store.dial);
  std::string out = fmt::format(
      "tuttirun: dry run: {} rank{} on {} host{} via {}; store at {}; command {}\n",
      plan.world_size(), plan.world_size() == 1 ? "" : "s", plan.hosts().size(),
      plan.hosts().size() == 1 ? "" : "s", exec_name(exec), where, fmt::join(command, " "));
  for (const RankSlot& s : plan.slots)
    out += fmt::format("rank {} host {} local_rank {}/{} cross_rank {}/{}\n", s.rank, s.host,
                       s.local_rank, s.local_size, s.cross_rank, s.cross_size);
  FdSink(STDOUT_FILENO, STDERR_FILENO).write(Stream::kStdout, out);
}

struct JobSetup {
  const LaunchOptions& options;
  JobPlan plan;
  ExecKind exec = ExecKind::kLocal;
  StoreEndpoint store;
  Environment launcher_env;
  std::vector<EnvExport> exports;
  JobIdentity job;
};

std::unique_ptr<ExecBackend> make_backend(const JobSetup& s) {
  RemoteBackendOptions o;
  switch (s.exec) {
    case ExecKind::kLocal:
      return make_local_backend();
    case ExecKind::kSsh:
      o.shell = RemoteShell::kSsh;
      o.program = s.options.ssh;
      break;
    case ExecKind::kKubexec:
      o.shell = RemoteShell::kKubexec;
      o.program = s.options.kubexec.empty() ? default_kubexec() : s.options.kubexec;
      break;
    case ExecKind::kSrun:
      o.shell = RemoteShell::kSrun;
      o.program = "srun";
      o.srun_unbind = slurm_binds_tasks();
      break;
  }
  o.remote_tuttirun =
      s.options.remote_tuttirun.empty() ? own_executable() : s.options.remote_tuttirun;
  o.grace_seconds = s.options.grace_seconds;
  o.cwd = current_directory();
  return make_remote_backend(std::move(o));
}

// One launch of the whole job. Returns tuttirun's exit code for it.
int run_attempt(JobSetup& s, SignalWatcher& signals, int attempt, bool* interrupted) {
  std::unique_ptr<ExecBackend> backend = make_backend(s);
  s.job.restart_count = attempt;
  SegmentSweep sweep(s.job.job_id);
  // The job's store: one tuttirun serves, or (--store) a prefix of its own in an etcd.
  // Ranks whose heartbeat stops (--hang-timeout) are reported here by the server's threads
  // (declared first, so that it outlives them); the heartbeats travel on the ranks' connections
  // to tuttirun's own store.
  SilentRanks silent;
  std::optional<bootstrap::TcpStoreServer> served;
  std::optional<EtcdJobKeys> etcd_keys;
  const double hang_timeout = s.options.hang_timeout_seconds.value_or(
      s.options.min_np > 0 ? kDefaultHangTimeoutSeconds : 0.0);
  if (s.options.store_url.empty()) {
    served.emplace(s.store.bind, s.options.store_port, s.job.job_token);
    s.job.store_address = net::Endpoint{s.store.dial, served->port()}.to_string();
    if (hang_timeout > 0)
      served->watch_heartbeats(std::chrono::milliseconds(static_cast<int64_t>(hang_timeout * 1000)),
                               [&silent](int64_t id, int32_t pid, double quiet) {
                                 silent.report(SilentRank{id, static_cast<pid_t>(pid), quiet});
                               });
  } else {
    if (s.options.hang_timeout_seconds.value_or(0) > 0)
      log::warn(
          "tuttirun: --hang-timeout needs tuttirun's own store (the ranks' heartbeats travel on "
          "their connections to it); with --store a stopped rank is found at "
          "TUTTI_COLLECTIVE_TIMEOUT instead");
    etcd_keys.emplace(s.options.store_url, s.job.job_id, attempt);
    s.job.store_address = etcd_keys->url();
  }
  log::info("tuttirun: job {} attempt {} with {} ranks via {}; store at {}; command {}",
            s.job.job_id, attempt, s.plan.world_size(), exec_name(s.exec), s.job.store_address,
            fmt::join(s.options.command, " "));

  FdSink sink(STDOUT_FILENO, STDERR_FILENO);
  OutputMux mux(sink, s.options.tag_output);
  if (!s.options.output_dir.empty()) mux.copy_to_directory(s.options.output_dir);
  Environment base = backend->remote() ? remote_base(s.launcher_env) : s.launcher_env;
  std::vector<RankProcess> ranks;
  ranks.reserve(s.plan.slots.size());
  // Local ranks all run here, so tuttirun can tell which port is free for torch's store; remote
  // ones get theirs from rank 0's agent (torch_env.hpp).
  std::optional<TorchMaster> torch_master;
  if (!backend->remote() && !torch_master_exported(s.exports))
    torch_master = TorchMaster{"127.0.0.1", pick_free_tcp_port()};
  bool one_thread_said = false;
  const bool elastic = !s.options.host_discovery_script.empty();
  // Starts one rank: `label` tags its output (its rank, or in an elastic job its member id),
  // `slot` and `size` are its place in the world it starts into, `extra` more variables.
  const auto start_rank = [&](int label, const RankSlot& slot, int size,
                              const std::vector<std::pair<std::string, std::string>>& extra) {
    Environment env = rank_environment(base, s.exports, slot, size, s.job);
    for (const auto& [name, value] : extra) env.set(name, value);
    // Its index in `ranks`: the heartbeats it sends under this number find its process.
    env.set("TUTTI_LAUNCH_ID", std::to_string(ranks.size()));
    // Below --min-np the survivors wait in elastic::run for the ranks this launcher adds, or,
    // when no ranks can come (no discovery), fail at once instead of starting another step.
    if (s.options.min_np > 0) env.set("TUTTI_ELASTIC_MIN_NP", std::to_string(s.options.min_np));
    if (elastic)
      env.set("TUTTI_ELASTIC_TIMEOUT", fmt::format("{}", s.options.elastic_timeout_seconds));
    if (set_torch_identity(env, s.exports, slot, size) && !one_thread_said) {
      one_thread_said = true;
      log::info(
          "tuttirun: OMP_NUM_THREADS=1 for every rank that shares its host, as torchrun "
          "does (set OMP_NUM_THREADS, or -x OMP_NUM_THREADS=N, to choose)");
    }
    if (torch_master) set_torch_master(env, *torch_master);
    // Ranks on one host share memory; ranks on different hosts must not try. The host names tell
    // which is which better than hostnames do (pods on one node, namespaces in a test).
    if (backend->remote() && !base.get("TUTTI_HOST") &&
        std::none_of(s.exports.begin(), s.exports.end(),
                     [](const EnvExport& e) { return e.name == "TUTTI_HOST"; }))
      env.set("TUTTI_HOST", slot.host);
    RankSlot labelled = slot;
    labelled.rank = label;
    std::optional<ChildProcess> child;
    try {
      child.emplace(backend->start(slot, s.options.command, env));
    } catch (const Error& e) {
      throw StartFailed(e);
    }
    ranks.push_back(RankProcess{labelled, std::move(*child)});
    ChildProcess& p = ranks.back().process;
    log::info("tuttirun: started {} as pid {}",
              rank_and_host(label, backend->remote() ? slot.host : ""), p.pid());
    mux.add(label, Stream::kStdout, p.take_stdout());
    mux.add(label, Stream::kStderr, p.take_stderr());
  };
  for (const RankSlot& slot : s.plan.slots) {
    std::vector<std::pair<std::string, std::string>> extra;
    if (elastic)
      extra = {{"TUTTI_ELASTIC_EPOCH", "0"},
               {"TUTTI_MEMBER_ID", std::to_string(slot.rank)},
               {"TUTTI_ELASTIC_JOB", s.job.job_id}};
    try {
      start_rank(slot.rank, slot, s.plan.world_size(), extra);
    } catch (const StartFailed& e) {
      print_error(fmt::format("tuttirun: could not start {}: {}",
                              rank_and_host(slot.rank, backend->remote() ? slot.host : ""),
                              e.what()));
      backend->signal_job(SIGKILL);
      return 1;
    }
  }
  std::optional<bootstrap::TcpStore> store_client;
  std::optional<ElasticGrowth> growth;
  if (elastic) {
    bootstrap::Store* job_store = etcd_keys ? &etcd_keys->store() : nullptr;
    if (job_store == nullptr)
      job_store = &store_client.emplace(net::parse_endpoint(s.job.store_address, "the job's store"),
                                        s.job.job_token, -1, Deadline::after_seconds(10));
    std::vector<Member> initial;
    for (const RankSlot& slot : s.plan.slots) initial.push_back(Member{slot.rank, slot.host});
    growth.emplace(
        ElasticConfig{s.options.host_discovery_script, s.options.discovery_interval_seconds,
                      s.options.max_np, s.options.blacklist_after},
        s.job.job_id, *job_store, std::move(initial), start_rank,
        [&mux](const std::string& line) { mux.sink().write(Stream::kStderr, line + "\n"); });
  }

  Supervisor supervisor(
      ranks, *backend, mux, signals,
      SupervisorOptions{s.options.grace_seconds, s.options.verbose, backend->remote(),
                        s.options.min_np, s.options.elastic_timeout_seconds, hang_timeout},
      growth ? &*growth : nullptr, &silent);
  int code = supervisor.run();
  *interrupted = supervisor.interrupted();
  return code;
}

// Sleeps between attempts; a signal to tuttirun cuts the wait short and ends the job.
// How long an elastic job waits at its start for the discovery script to list enough slots.
constexpr double kInitialDiscoverySeconds = 60.0;

// The hosts an elastic job starts on: the discovery script's, once they have the slots -np (or
// --min-np) needs.
HostSelection initial_discovery(const LaunchOptions& options) {
  const int needed = std::max({options.np, options.min_np, 1});
  const Deadline give_up = Deadline::after_seconds(kInitialDiscoverySeconds);
  for (bool said = false;; said = true) {
    Discovery found = discover_hosts(options.host_discovery_script, 10.0);
    if (!found.error.empty()) throw make_error(ErrorCode::kConfig, "{}", found.error);
    const long slots = found.hosts.total_slots();
    if (slots >= needed)
      return HostSelection{HostOrigin::kHostList, std::move(found.hosts), "--host-discovery-script",
                           ""};
    if (give_up.expired())
      throw make_error(ErrorCode::kConfig,
                       "the host discovery script listed {} slot{} for {} s; the job needs {} "
                       "to start (-np, --min-np)",
                       slots, slots == 1 ? "" : "s", kInitialDiscoverySeconds, needed);
    if (!said)
      print_error(
          fmt::format("tuttirun: the host discovery script lists {} slot{}; waiting up "
                      "to {} s for the {} the job needs to start",
                      slots, slots == 1 ? "" : "s", kInitialDiscoverySeconds, needed));
    ::usleep(static_cast<useconds_t>(options.discovery_interval_seconds * 1e6));
  }
}

std::optional<int> wait_backoff(double seconds, SignalWatcher& signals) {
  Deadline until = Deadline::after_seconds(seconds);
  while (!until.expired()) {
    pollfd p{signals.fd(), POLLIN, 0};
    ::poll(&p, 1, until.remaining_ms(1000));
    for (int sig : signals.take())
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) return 128 + sig;
  }
  return std::nullopt;
}

}  // namespace

int run_job(const LaunchOptions& given) {
  LaunchOptions options = given;  // an elastic job's -np and --min-np come from its hosts
  // The ranks get tuttirun's TUTTI_* variables: a bad value (TUTTI_ALGO=rnig, a TUTTI_LOG_LEVEL
  // the logger would fall back from) fails here, once, before any rank starts, rather than in
  // every rank's init; a misspelt name is named with the setting meant.
  try {
    env::check_all();
  } catch (const Error& e) {
    print_error(fmt::format("tuttirun: {}; no rank was started", e.what()));
    return kExitUsage;
  }
  for (const auto& [name, near] : env::unknown_variables())
    if (!near.empty())
      log::warn("tuttirun: {} is not a tutti setting and is ignored; did you mean {}?", name, near);
  if (options.verbose && !log::enabled(log::Level::kInfo)) log::set_threshold(log::Level::kInfo);
  // A reader of tuttirun's output that goes away must not kill tuttirun before it stops the job.
  ::signal(SIGPIPE, SIG_IGN);

  Environment launcher_env = Environment::from_process();
  std::vector<std::string> unset;
  std::vector<EnvExport> exports;
  HostSelection hosts;
  JobPlan plan;
  ExecKind exec = ExecKind::kLocal;
  try {
    exports = resolve_exports(options.exports, launcher_env, &unset);
    torch_master_exported(exports);  // both or neither
    if (!options.host_discovery_script.empty()) {
      hosts = initial_discovery(options);
      if (options.np == 0) {
        const long slots = hosts.hosts.total_slots();
        options.np =
            static_cast<int>(options.max_np > 0 ? std::min<long>(slots, options.max_np) : slots);
      }
      if (options.min_np == 0) options.min_np = options.np;  // Horovod's default
    } else {
      hosts = select_hosts(options.hosts, env::process_value, [](const std::string& path) {
        return ::access(path.c_str(), R_OK) == 0;
      });
    }
    if (hosts.origin == HostOrigin::kThisHost) {
      if (options.np < 1)
        throw make_error(ErrorCode::kConfig, "-np N is required when no hosts are given");
      plan = plan_local(options.np);
    } else {
      plan = plan_hosts(hosts.hosts, options.np);
      if (options.verbose || hosts.origin == HostOrigin::kMpiJob ||
          hosts.origin == HostOrigin::kSlurm)
        log::info("tuttirun: {} ranks on {} hosts from {}", plan.world_size(), plan.hosts().size(),
                  hosts.source);
    }
    exec = choose_exec(options, hosts, plan);
    if (options.min_np > plan.world_size())
      throw make_error(ErrorCode::kConfig,
                       "--min-np {} is more than the {} ranks the hosts give: the job could never "
                       "go on after a failure",
                       options.min_np, plan.world_size());
    // mpirun starts the processes itself; every other mode forks one local child per rank.
    if (!options.mpirun)
      check_launch_capacity(plan.world_size(), exec == ExecKind::kLocal ? plan.world_size() : 0,
                            LaunchLimits::of_this_process());
  } catch (const Error& e) {
    print_error(fmt::format("tuttirun: {}\nRun 'tuttirun --help' for usage.", e.what()));
    return kExitUsage;
  }
  for (const std::string& name : unset)
    log::warn("tuttirun: -x {}: not set in tuttirun's environment; not passed on", name);

  if (options.mpirun) {
    std::string shell;
    if (exec == ExecKind::kKubexec)
      shell = options.kubexec.empty() ? default_kubexec() : options.kubexec;
    if (exec == ExecKind::kSsh && options.ssh != "ssh") shell = options.ssh;
    return run_mpirun(options, hosts, plan, shell, exec == ExecKind::kKubexec, exports,
                      launcher_env);
  }

  JobSetup setup{options, std::move(plan), exec, {}, launcher_env, exports, {}};
  try {
    // (With --store the ranks dial etcd, not an address of this machine.)
    if (options.store_url.empty())
      setup.store = choose_store(options, setup.plan, exec != ExecKind::kLocal, launcher_env);
  } catch (const Error& e) {
    print_error(fmt::format("tuttirun: {}", e.what()));
    return kExitUsage;
  }
  if (options.dry_run) {
    print_plan(setup.plan, exec, setup.store, options.store_url, options.command);
    return 0;
  }

  Environment command_env = launcher_env;
  for (const EnvExport& e : exports) command_env.set(e.name, e.value);
  {
    std::unique_ptr<ExecBackend> backend = make_backend(setup);
    if (std::string problem = backend->check_command(options.command, command_env);
        !problem.empty()) {
      print_error(problem);
      return kExitCommandNotFound;
    }
  }

  // Installed before the first fork so that neither SIGCHLD nor Ctrl-C during startup is lost.
  SignalWatcher signals;
  if (exec != ExecKind::kLocal && options.probe_timeout_seconds > 0) {
    std::unique_ptr<ExecBackend> prober = make_backend(setup);
    prober->check_command(options.command, command_env);
    FdSink progress(STDOUT_FILENO, STDERR_FILENO);
    ProbeResult probe =
        probe_hosts(*prober, setup.plan.hosts(), options.probe_timeout_seconds, progress, signals);
    if (probe.interrupted_by) return 128 + *probe.interrupted_by;
    if (probe.hopeless) {
      const UnreachableHost& h = probe.unreachable.front();
      print_error(fmt::format(
          "tuttirun: {} cannot run ranks: {}\n"
          "tuttirun: no rank was started. tuttirun must be installed on every host at the same "
          "path as here ({}), or pass --remote-tuttirun PATH; the {} command must exist here.",
          h.host, h.reason,
          setup.options.remote_tuttirun.empty() ? "this tuttirun's path"
                                                : setup.options.remote_tuttirun,
          exec_name(exec)));
      return kExitHostsUnreachable;
    }
    if (!probe.unreachable.empty()) {
      std::string advice = unreachable_hosts_advice(exec);
      print_error(
          fmt::format("tuttirun: {} of {} hosts never became reachable within {}s through {}: {}\n"
                      "tuttirun: no rank was started.{}{}",
                      probe.unreachable.size(), setup.plan.hosts().size(),
                      options.probe_timeout_seconds, exec_name(exec),
                      describe_hosts(probe.unreachable, 20), advice.empty() ? "" : " ", advice));
      return kExitHostsUnreachable;
    }
  }

  setup.job = make_job_identity(env::raw("TUTTI_JOB_TOKEN"), options.job_id, "", options.timeout);
  const JobIdClaim claim(setup.job.job_id);
  for (int attempt = 0;; ++attempt) {
    bool interrupted = false;
    int code = run_attempt(setup, signals, attempt, &interrupted);
    if (code == 0 || interrupted || attempt >= options.restarts) return code;
    print_error(fmt::format(
        "tuttirun: attempt {} of {} failed (exit {}); relaunching the whole job in {}s "
        "(TUTTI_RESTART_COUNT={})",
        attempt + 1, options.restarts + 1, code, options.restart_backoff_seconds, attempt + 1));
    if (auto sig = wait_backoff(options.restart_backoff_seconds, signals)) return *sig;
  }
}

}  // namespace tutti::launcher
