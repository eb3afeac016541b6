// Owns one file descriptor and closes it on destruction: sockets, pipes, pidfds, shared-memory
// files, epoll sets. The one fd owner of the project: runtime, launcher and bench all use it.
// Header-only and free of the rest of tutti, so the launcher's and the bench's pieces can use it
// without linking the runtime's layers (target tutti_net_fd).
#pragma once

#include <unistd.h>

#include <utility>

namespace tutti::net {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held (if any) and takes fd.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace tutti::net
