#include "launcher/mpirun_runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "core/deadline.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "hostfile/emit.hpp"
#include "launcher/child_process.hpp"
#include "launcher/command_lookup.hpp"
#include "launcher/mpirun_mode.hpp"
#include "launcher/output_sink.hpp"
#include "launcher/signal_watcher.hpp"

namespace tutti::launcher {
namespace {

void say(const std::string& text, Stream stream = Stream::kStderr) {
  FdSink(STDOUT_FILENO, STDERR_FILENO).write(stream, text + "\n");
}

// `mpirun --version`, within a deadline: a broken installation must not hang tuttirun.
std::string version_output(const std::string& mpirun, const Environment& env) {
  ChildProcess p =
      ChildProcess::spawn(SpawnRequest{mpirun, {mpirun, "--version"}, env.to_strings(), 0});
  net::Fd out = p.take_stdout();
  net::Fd err = p.take_stderr();
  std::string text;
  Deadline deadline = Deadline::after_seconds(20);
  char buf[4096];
  while (out.valid() && !deadline.expired()) {
    pollfd fd{out.get(), POLLIN, 0};
    ::poll(&fd, 1, deadline.remaining_ms(200));
    ssize_t n = ::read(out.get(), buf, sizeof buf);
    if (n > 0)
      text.append(buf, static_cast<size_t>(n));
    else if (n == 0 || (errno != EAGAIN && errno != EINTR))
      out.reset();
  }
  while (!p.try_reap() && !deadline.expired()) ::poll(nullptr, 0, 20);
  if (!p.reaped())
    throw make_error(ErrorCode::kTimeout, "'{} --version' did not finish within 20s", mpirun);
  return text;
}

// The hostfile mpirun reads; removed when tuttirun is done with it.
class TemporaryHostfile {
 public:
  explicit TemporaryHostfile(const std::string& text) {
    std::string pattern =
        env::process_value("TMPDIR").value_or("/tmp") + "/tuttirun-hostfile-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = ::mkstemp(name.data());
    if (fd < 0) throw_system_error(fmt::format("create {}", pattern), errno);
    net::Fd file(fd);
    path_ = name.data();
    if (::write(file.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      throw_system_error(fmt::format("write {}", path_), errno);
  }
  ~TemporaryHostfile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TemporaryHostfile(const TemporaryHostfile&) = delete;
  TemporaryHostfile& operator=(const TemporaryHostfile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

int run_mpirun(const LaunchOptions& options, const HostSelection& hosts, const JobPlan& plan,
               const std::string& remote_shell, bool no_tree_spawn,
               const std::vector<EnvExport>& exports, const Environment& launcher_env) {
  Environment env = launcher_env;
  for (const EnvExport& e : exports) env.set(e.name, e.value);
  CommandLookup found = find_executable(options.mpirun_path,
                                        env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
  if (!found.found()) {
    say(
        fmt::format("tuttirun: --mpirun: {}; install Open MPI (openmpi-bin) or pass "
                    "--mpirun-path",
                    found.problem));
    return kExitCommandNotFound;
  }
  std::optional<int> major;
  try {
    major = open_mpi_major(version_output(found.path, env));
  } catch (const Error& e) {
    say(fmt::format("tuttirun: --mpirun: {}", e.what()));
    return 1;
  }
  if (!major) {
    say(
        fmt::format("tuttirun: --mpirun: {} is not Open MPI ('--version' does not say "
                    "\"(Open MPI)\"); --mpirun drives Open MPI 4 and 5. For MPICH/Intel MPI, run "
                    "their mpiexec with -launcher-exec kubexec and a hostfile from tutti-hostfile "
                    "--format mpich",
                    found.path));
    return 1;
  }

  std::optional<TemporaryHostfile> hostfile;
  if (hosts.origin != HostOrigin::kThisHost)
    hostfile.emplace(hostfile::emit(hosts.hosts, hostfile::Format::kOpenMpi));

  MpirunInputs in;
  in.mpirun = found.path;
  in.major = *major;
  in.hostfile_path = hostfile ? hostfile->path() : "";
  in.np = options.np > 0 ? options.np : plan.world_size();
  in.remote_shell = remote_shell;
  in.no_tree_spawn = no_tree_spawn;
  for (const std::string& entry : launcher_env.to_strings())
    if (entry.starts_with("TUTTI_")) in.forwarded.push_back(entry.substr(0, entry.find('=')));
  for (const EnvExport& e : exports)
    if (std::find(in.forwarded.begin(), in.forwarded.end(), e.name) == in.forwarded.end())
      in.forwarded.push_back(e.name);
  in.command = options.command;
  MpirunCommand cmd = mpirun_command(in);
  for (const auto& [name, value] : cmd.env) env.set(name, value);

  std::string env_text;
  for (const auto& [name, value] : cmd.env) env_text += fmt::format("{}={} ", name, value);
  if (options.dry_run || options.verbose)
    say(fmt::format("tuttirun: Open MPI {}: {}{}", *major, env_text, fmt::join(cmd.argv, " ")),
        options.dry_run ? Stream::kStdout : Stream::kStderr);
  if (options.dry_run) return 0;

  SignalWatcher signals;
  SpawnRequest req{found.path, cmd.argv, env.to_strings(), 0};
  req.inherit_output = true;
  ChildProcess mpirun = ChildProcess::spawn(req);
  for (;;) {
    if (auto status = mpirun.try_reap()) return status->shell_code();
    pollfd p{signals.fd(), POLLIN, 0};
    ::poll(&p, 1, 200);
    // mpirun stops its daemons and ranks itself when told; tuttirun only passes the word on.
    for (int sig : signals.take())
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) mpirun.signal(sig);
  }
}

}  // namespace tutti::launcher
