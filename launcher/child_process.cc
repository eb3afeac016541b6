#include "launcher/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "core/deadline.hpp"
#include "core/error.hpp"
#include "launcher/pipe.hpp"

namespace tutti::launcher {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the forked child: only async-signal-safe calls, since tuttirun has other threads (the
// store server) whose locks may be held at fork time.
[[noreturn]] void exec_child(const SpawnRequest& req, char* const* argv, char* const* envp,
                             pid_t parent, int in, int out, int err, int report) {
  if (::setpgid(0, req.process_group) != 0) {
    // The parent sets the group too; failing here only matters if both fail, checked there.
  }
  if (req.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // tuttirun may have died between fork and prctl; then nobody would ever kill us.
    if (::getppid() != parent) ::_exit(127);
  }
  if (::dup2(in, STDIN_FILENO) < 0 || (out >= 0 && ::dup2(out, STDOUT_FILENO) < 0) ||
      (err >= 0 && ::dup2(err, STDERR_FILENO) < 0)) {
    int e = errno;
    [[maybe_unused]] ssize_t n = ::write(report, &e, sizeof e);
    ::_exit(127);
  }
  // tuttirun's signal handling must not leak into the rank: exec keeps the mask and ignored
  // signals.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT}) ::signal(sig, SIG_DFL);
  ::execve(req.path.c_str(), argv, envp);
  int e = errno;
  [[maybe_unused]] ssize_t n = ::write(report, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

ChildProcess ChildProcess::spawn(const SpawnRequest& req) {
  if (req.argv.empty())
    throw make_error(ErrorCode::kInvalidArgument, "spawn of '{}' without argv[0]", req.path);
  std::vector<char*> argv = c_strings(req.argv);
  std::vector<char*> envp = c_strings(req.env);
  net::Fd devnull;
  Pipe in;
  if (req.pipe_stdin) {
    in = make_pipe(false);
  } else {
    devnull.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!devnull.valid()) throw_system_error("open /dev/null for the ranks' stdin", errno);
  }
  Pipe out;
  Pipe err;
  if (!req.inherit_output) {
    out = make_pipe(true);
    err = make_pipe(true);
  }
  Pipe report = make_pipe(false);  // CLOEXEC: closes on a successful exec, carries errno otherwise

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_system_error(fmt::format("fork for '{}'", req.path), errno);
  if (pid == 0)
    exec_child(req, argv.data(), envp.data(), parent,
               req.pipe_stdin ? in.read_end.get() : devnull.get(), out.write_end.get(),
               err.write_end.get(), report.write_end.get());

  // Both sides set the group so that it is in place whichever runs first.
  if (::setpgid(pid, req.process_group == 0 ? pid : req.process_group) != 0 && errno != EACCES &&
      errno != ESRCH) {
    int e = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw_system_error(fmt::format("setpgid for '{}' (pid {})", req.path, pid), e);
  }
  ChildProcess child(pid, std::move(in.write_end), std::move(out.read_end),
                     std::move(err.read_end));
  in.read_end.reset();
  out.write_end.reset();
  err.write_end.reset();
  report.write_end.reset();

  // exec either succeeds (EOF) or reports errno; a stuck child between fork and exec is a bug we
  // still bound with a deadline.
  Deadline deadline = Deadline::after_seconds(30);
  int exec_errno = 0;
  size_t got = 0;
  while (!deadline.expired()) {
    pollfd p{report.read_end.get(), POLLIN, 0};
    int r = ::poll(&p, 1, deadline.remaining_ms(1000));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = ::read(report.read_end.get(), reinterpret_cast<char*>(&exec_errno) + got,
                       sizeof exec_errno - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
    if (got == sizeof exec_errno) break;
  }
  if (got == sizeof exec_errno) {
    // The child exits right after reporting; the destructor reaps it.
    throw make_error(ErrorCode::kSystem, "cannot execute '{}': {}", req.path,
                     std::strerror(exec_errno));
  }
  if (deadline.expired())
    throw make_error(ErrorCode::kInternal,
                     "tuttirun: '{}' (pid {}) neither ran nor failed within 30s of fork", req.path,
                     pid);
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      status_(std::exchange(other.status_, std::nullopt)),
      stdin_(std::move(other.stdin_)),
      stdout_(std::move(other.stdout_)),
      stderr_(std::move(other.stderr_)) {}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || status_) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

std::optional<ExitStatus> ChildProcess::try_reap() {
  if (status_) return status_;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = ExitStatus::from_wait_status(status);
  } else if (r < 0 && errno == ECHILD) {
    // Someone else reaped it; it is gone, but its status is unknown.
    status_ = ExitStatus::exited(255);
  }
  return status_;
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

}  // namespace tutti::launcher
