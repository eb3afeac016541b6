// Owns one file descriptor of the launcher (pipe ends, /dev/urandom, the signal pipe). Header-only
// so the launcher's pieces stay testable without linking the runtime's socket layer.
#pragma once

#include <unistd.h>

#include <utility>

namespace tutti::launcher {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe whose both ends are O_CLOEXEC (so no rank inherits another rank's pipe) and, when asked,
// O_NONBLOCK on the read end. Throws kSystem on failure.
struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};
Pipe make_pipe(bool nonblocking_read);

}  // namespace tutti::launcher
