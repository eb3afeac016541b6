#include "kubexec/attempt.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cerrno>
#include <csignal>

#include "core/deadline.hpp"
#include "core/error.hpp"

namespace bp = boost::process;

namespace tutti::kubexec {
namespace {

// How long stderr is held back when the remote command is silent on stdout. kubectl's transient
// failures arrive within this window; later stderr is the remote command's and flows on.
constexpr double kHoldSeconds = 5.0;
constexpr size_t kHoldBytes = 64 * 1024;

boost::filesystem::path resolve(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  boost::filesystem::path found = bp::search_path(program);
  if (found.empty())
    throw make_error(ErrorCode::kSystem,
                     "'{}' is not on PATH; install kubectl in the launcher image or set "
                     "KUBEXEC_KUBECTL to its path",
                     program);
  return found;
}

}  // namespace

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EPIPE and friends: nobody is reading any more
    text.remove_prefix(static_cast<size_t>(n));
  }
}

AttemptResult run_attempt(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  bp::pipe out_pipe;
  bp::pipe err_pipe;
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  std::error_code launch_error;
  bp::child child(
      bp::exe = resolve(argv[0]), bp::args = args, bp::std_out > out_pipe, bp::std_err > err_pipe,
      // kubectl must not outlive kubexec: when the MPI launcher kills its agent, the exec stream
      // has to close so the remote command gets its hangup.
      bp::extend::on_exec_setup = [](auto&) { ::prctl(PR_SET_PDEATHSIG, SIGTERM); }, launch_error);
  if (launch_error)
    throw make_error(ErrorCode::kSystem, "cannot start {}: {}; check KUBEXEC_KUBECTL", argv[0],
                     launch_error.message());

  AttemptResult result;
  Deadline hold = Deadline::after_seconds(kHoldSeconds);
  auto commit = [&] {
    if (result.committed) return;
    result.committed = true;
    write_all(err_fd, result.held_stderr);
    result.held_stderr.clear();
  };
  std::array<pollfd, 2> fds = {pollfd{out_pipe.native_source(), POLLIN, 0},
                               pollfd{err_pipe.native_source(), POLLIN, 0}};
  std::array<char, 65536> buffer;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    int timeout_ms = result.committed ? -1 : hold.remaining_ms(1000);
    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw_system_error("poll on kubectl's output", errno);
    if (!result.committed && hold.expired()) commit();
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      ssize_t n = ::read(fds[k].fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[k].fd = -1;  // EOF (or a broken pipe): the pipe object closes it
        continue;
      }
      std::string_view chunk(buffer.data(), static_cast<size_t>(n));
      if (k == 0) {
        commit();
        write_all(out_fd, chunk);
      } else if (result.committed) {
        write_all(err_fd, chunk);
      } else {
        result.held_stderr.append(chunk);
        if (result.held_stderr.size() > kHoldBytes) commit();
      }
    }
  }
  child.wait();
  int status = child.native_exit_code();
  if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  else
    result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace tutti::kubexec
