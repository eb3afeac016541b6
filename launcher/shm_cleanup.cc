#include "launcher/shm_cleanup.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

JobIdClaim::JobIdClaim(const std::string& job_id, const std::string& dir)
    : path_(dir + "/tutti-" + job_id + ".claim") {
  std::error_code ec;
  if (job_id.empty() || !std::filesystem::is_directory(dir, ec)) return;  // nothing to share
  for (int tries = 0; tries < 100; ++tries) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      // A /dev/shm this user cannot write to holds nothing of this job either.
      log::debug("tuttirun: no claim on job id {} ({}: {})", job_id, path_, std::strerror(errno));
      return;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char pid[32] = {};
      const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) return;
      throw make_error(ErrorCode::kConfig,
                       "another job with --job-id {} runs on this host (tuttirun pid {}): jobs "
                       "with one id share their shared-memory names, and would break each other. "
                       "Give each job its own --job-id (or leave it out: tuttirun draws one)",
                       job_id, n > 0 ? std::string(pid, static_cast<size_t>(n)) : "?");
    }
    // The file may have been unlinked by the claim before ours between open and flock: a lock on
    // it would claim nothing. Only the inode the path still names counts.
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      const std::string pid = std::to_string(::getpid());
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0)
        log::debug("tuttirun: could not write its pid into {}", path_);
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
}

JobIdClaim::~JobIdClaim() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked, so that no other claim took this inode meanwhile
  ::close(fd_);
}

}  // namespace tutti::launcher
