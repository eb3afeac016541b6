// The ssh, kubexec and srun backends. Every rank is a local helper process (ssh, kubexec, or srun
// starting a one-task job step of the allocation on the rank's node; /bin/sh for a rank on this
// machine itself under ssh or kubexec) in one
// process group; what runs on the host is the rank agent, which gets the rank's request over the
// helper's stdin. Stopping the job closes those stdins: each agent then stops its rank with SIGTERM
// and, after the grace period, SIGKILL. SIGKILL to the helpers is the last step, for a stream that
// hangs.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"
#include "launcher/command_lookup.hpp"
#include "launcher/exec_backend.hpp"
#include "launcher/local_host.hpp"
#include "launcher/process_tree.hpp"
#include "launcher/rank_agent.hpp"

namespace tutti::launcher {
namespace {

// The helper's stdin is a pipe; the request is small, but a remote side that never reads must not
// block tuttirun forever.
void write_request(int fd, const std::string& text, const RankSlot& slot) {
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  Deadline deadline = Deadline::after_seconds(60);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (deadline.expired())
        throw make_error(ErrorCode::kTimeout,
                         "rank {} on {}: the remote side did not read its request within 60s",
                         slot.rank, slot.host);
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, deadline.remaining_ms(1000));
      continue;
    }
    throw make_error(ErrorCode::kSystem,
                     "rank {} on {}: the exec stream closed before the rank's request was sent "
                     "(see the rank's stderr above)",
                     slot.rank, slot.host);
  }
}

constexpr const char* kShell = "/bin/sh";

class RemoteBackend : public ExecBackend {
 public:
  explicit RemoteBackend(RemoteBackendOptions options)
      : options_(std::move(options)), helper_env_(Environment::from_process()) {
    become_subreaper("tuttirun");
  }
  ~RemoteBackend() override {
    stdins_.clear();
    if (group_ > 0) ::kill(-group_, SIGKILL);
  }

  std::string name() const override {
    switch (options_.shell) {
      case RemoteShell::kSsh:
        return "ssh";
      case RemoteShell::kKubexec:
        return "kubexec";
      case RemoteShell::kSrun:
        return "srun";
    }
    return "?";
  }
  bool remote() const override { return true; }

  std::string check_command(const std::vector<std::string>& command, const Environment&) override {
    if (command.empty()) return "tuttirun: no command given";
    CommandLookup found = find_executable(
        options_.program, helper_env_.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
    if (!found.found())
      return fmt::format("tuttirun: --exec {} needs {}: {}", name(), options_.program,
                         found.problem);
    program_ = found.path;
    return "";
  }

  std::optional<ChildProcess> start_probe(const std::string& host) override {
    Environment env = helper_env_;
    // The probe loop retries by itself and reports each host's state; kubexec's own retries would
    // only hide that state for longer.
    env.set("KUBEXEC_RETRIES", "0");
    // `tuttirun --version` rather than `true`: it also proves the rank agent can run there.
    return ChildProcess::spawn(
        helper_request(host, shell_quote(options_.remote_tuttirun) + " --version", env, 0));
  }

  ChildProcess start(const RankSlot& slot, const std::vector<std::string>& command,
                     const Environment& env) override {
    std::string agent = shell_quote(options_.remote_tuttirun) + " --rank-agent";
    SpawnRequest req = helper_request(slot.host, agent, helper_env_, group_);
    req.pipe_stdin = true;
    ChildProcess child = ChildProcess::spawn(req);
    if (group_ == 0) group_ = child.pid();

    AgentRequest request;
    request.rank = slot.rank;
    request.host = slot.host;
    request.argv = command;
    for (const std::string& entry : env.to_strings()) {
      size_t eq = entry.find('=');
      request.env.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
    request.cwd = options_.cwd;
    request.grace_seconds = options_.grace_seconds;
    // tuttirun leaves MASTER_PORT in a rank's environment only when -x gave it.
    request.torch_master = !env.get("MASTER_PORT").has_value();
    net::Fd in = child.take_stdin();
    write_request(in.get(), encode_agent_request(request), slot);
    stdins_.push_back(std::move(in));
    return child;
  }

  void signal_job(int sig) override {
    // Closing the streams' stdin is how a remote rank hears "stop"; a signal to the local helper
    // would not cross the wire.
    stdins_.clear();
    if (sig == SIGKILL && group_ > 0 && ::kill(-group_, SIGKILL) != 0 && errno != ESRCH)
      throw_system_error("kill the job's ssh/kubexec processes", errno);
  }

  bool finish_job(Deadline deadline) override {
    stdins_.clear();
    return kill_all_children(group_, deadline);
  }

 private:
  const std::string& program() {
    if (program_.empty() && !check_command({"true"}, helper_env_).empty())
      throw make_error(ErrorCode::kConfig, "cannot run {}", options_.program);
    return program_;
  }

  // The local process that runs `remote` on `host`. A host that is this machine (an MPIJob
  // launcher that runs ranks too lists itself) gets it started here: no ssh to ourselves (a
  // launcher pod runs no sshd) and no kubectl exec into our own pod. Under srun every rank stays a
  // step of the allocation. (is_this_host may ask DNS: once per process started.)
  SpawnRequest helper_request(const std::string& host, const std::string& remote,
                              const Environment& env, pid_t group) {
    if (options_.shell != RemoteShell::kSrun && is_this_host(host))
      return SpawnRequest{kShell, {kShell, "-c", remote}, env.to_strings(), group};
    return SpawnRequest{program(), helper_argv(host, remote), env.to_strings(), group};
  }

  std::vector<std::string> helper_argv(const std::string& host, const std::string& remote) const {
    if (options_.shell == RemoteShell::kKubexec) return {options_.program, host, remote};
    if (options_.shell == RemoteShell::kSrun) {
      // One task on the host's node as a step of the allocation, so that Slurm accounts, signals
      // and cleans it up. --overlap: the ranks' steps share the allocation's CPUs and memory
      // instead of each waiting for its own; --cpu-bind=none where Slurm binds (the steps would
      // all get the node's first CPU); --mpi=none: the agent meets tuttirun, not a PMI server;
      // --kill-on-bad-exit: a step whose task fails ends at once. stdin (the request, then the
      // job's lifeline) goes to the one task.
      std::vector<std::string> argv = {options_.program,       "--nodes=1", "--ntasks=1",
                                       "--nodelist=" + host,   "--overlap", "--mpi=none",
                                       "--kill-on-bad-exit=1", "--quiet",   "--job-name=tutti"};
      if (options_.srun_unbind) argv.emplace_back("--cpu-bind=none");
      argv.insert(argv.end(), {"/bin/sh", "-c", remote});
      return argv;
    }
    // BatchMode: a password prompt would hang the job; the connect timeout bounds a dead host.
    return {options_.program, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-T", host, remote};
  }

  RemoteBackendOptions options_;
  Environment helper_env_;
  std::string program_;
  pid_t group_ = 0;
  std::vector<net::Fd> stdins_;
};

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") ==
          std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  return out + "'";
}

std::unique_ptr<ExecBackend> make_remote_backend(RemoteBackendOptions options) {
  return std::make_unique<RemoteBackend>(std::move(options));
}

}  // namespace tutti::launcher
