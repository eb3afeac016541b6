#include "launcher/shm_cleanup.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::launcher {

size_t remove_job_segments(const std::string& job_id, const std::string& dir) {
  if (job_id.empty()) return 0;
  const std::string prefix = "tutti-" + job_id + "-";
  size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return 0;  // no /dev/shm here: nothing can have been left there
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !entry.is_regular_file(ec)) continue;
    if (std::filesystem::remove(entry.path(), ec)) {
      ++removed;
    } else if (ec) {
      log::warn("tuttirun: could not remove leftover shared memory {}: {}; remove it by hand",
                entry.path().string(), ec.message());
    }
  }
  return removed;
}

JobIdClaim::JobIdClaim(const std::string& job_id, const std::string& dir) {
  if (job_id.empty()) return;
  // An abstract Unix socket (Linux): it exists exactly while a process holds it open, so a
  // killed tuttirun leaves nothing behind, neither in /dev/shm nor anywhere else. Its name says
  // which /dev/shm the claim is about; the host's network namespace is its scope, as a host's
  // /dev/shm is (pods have their own of both).
  const std::string name = "tutti-job-claim:" + dir + ":" + job_id;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t length = std::min(name.size(), sizeof address.sun_path - 1);
  std::memcpy(address.sun_path + 1, name.data(), length);  // sun_path[0] = 0: abstract
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), size) == 0 && ::listen(fd, 8) == 0) {
    fd_ = fd;
    return;
  }
  const int err = errno;
  ::close(fd);
  if (err != EADDRINUSE) {
    log::debug("tuttirun: no claim on job id {} ({})", job_id, std::strerror(err));
    return;
  }
  // Held: ask the holder who it is (SO_PEERCRED), for the message.
  std::string holder = "?";
  if (const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); probe >= 0) {
    ucred credentials{};
    socklen_t credentials_size = sizeof credentials;
    if (::connect(probe, reinterpret_cast<const sockaddr*>(&address), size) == 0 &&
        ::getsockopt(probe, SOL_SOCKET, SO_PEERCRED, &credentials, &credentials_size) == 0)
      holder = std::to_string(credentials.pid);
    ::close(probe);
  }
  throw make_error(ErrorCode::kConfig,
                   "another job with --job-id {} runs on this host (tuttirun pid {}): jobs with "
                   "one id share their shared-memory names, and would break each other. Give "
                   "each job its own --job-id (or leave it out: tuttirun draws one)",
                   job_id, holder);
}

JobIdClaim::~JobIdClaim() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tutti::launcher
