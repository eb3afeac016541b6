#include "launcher/pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"

namespace tutti::launcher {

Pipe make_pipe(bool nonblocking_read) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw_system_error("pipe2 (too many open files? raise ulimit -n)", errno);
  Pipe p{net::Fd(fds[0]), net::Fd(fds[1])};
  if (nonblocking_read) {
    int flags = ::fcntl(p.read_end.get(), F_GETFL);
    if (flags < 0 || ::fcntl(p.read_end.get(), F_SETFL, flags | O_NONBLOCK) != 0)
      throw_system_error("fcntl O_NONBLOCK on a pipe", errno);
  }
  return p;
}

}  // namespace tutti::launcher
