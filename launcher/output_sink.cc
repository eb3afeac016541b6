#include "launcher/output_sink.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace tutti::launcher {

void FdSink::write(Stream stream, std::string_view bytes) {
  int i = stream == Stream::kStdout ? 0 : 1;
  if (broken_[i]) return;
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fds_[i], bytes.data() + off, bytes.size() - off);
    if (n >= 0) {
      off += static_cast<size_t>(n);
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // An inherited non-blocking terminal or pipe: wait for room instead of dropping output. A
      // slow reader slows the ranks down through their pipes, which is the intended back-pressure.
      pollfd p{fds_[i], POLLOUT, 0};
      ::poll(&p, 1, 1000);
    } else {
      broken_[i] = true;
      return;
    }
  }
}

}  // namespace tutti::launcher
