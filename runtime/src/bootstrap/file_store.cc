#include "bootstrap/file_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "bootstrap/store_errors.hpp"
#include "core/error.hpp"
#include "net/fd.hpp"

namespace tutti::bootstrap {
namespace {

// Polling a shared filesystem: start fast (local tests, ranks arriving together), back off so a
// long wait does not hammer an NFS server.
class Backoff {
 public:
  // Sleeps for the next interval, never past the deadline. Returns false once it has expired.
  bool pause(Deadline deadline) {
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::nanoseconds>(interval_, deadline.remaining()));
    interval_ = std::min(interval_ * 2, std::chrono::microseconds(50'000));
    return true;
  }

 private:
  std::chrono::microseconds interval_{1000};
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool safe_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// Reads a whole file. Returns false when it does not exist.
bool read_file(const std::string& path, std::string* out) {
  net::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return false;
    throw_system_error(fmt::format("open('{}')", path), errno);
  }
  out->clear();
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_system_error(fmt::format("read('{}')", path), errno);
    if (n == 0) return true;
    out->append(buffer, static_cast<size_t>(n));
  }
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Unique among processes and threads on every host sharing the directory.
std::string temp_name() {
  static std::atomic<uint64_t> counter{0};
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return fmt::format("tmp-{}-{}-{}-{}", host, ::getpid(),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()), counter++);
}

// The lock file is held with flock for add(). Waits with backoff instead of blocking in flock so
// that a stuck holder turns into a timeout rather than a hang.
class FileLock {
 public:
  FileLock(const std::string& path, Deadline deadline) {
    fd_ = net::Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd_.valid()) throw_system_error(fmt::format("open('{}')", path), errno);
    Backoff backoff;
    while (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR)
        throw_system_error(fmt::format("flock('{}')", path), errno);
      if (!backoff.pause(deadline))
        throw make_error(
            ErrorCode::kTimeout,
            "timed out waiting for the lock '{}'; another process holds it (remove the "
            "file if no tutti job uses this directory)",
            path);
    }
  }
  ~FileLock() { ::flock(fd_.get(), LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  net::Fd fd_;
};

}  // namespace

FileStore::FileStore(std::string directory, std::chrono::milliseconds lock_timeout)
    : directory_(std::move(directory)), lock_timeout_(lock_timeout) {
  // Not created here: a path that does not exist is most likely a typo or a filesystem that is
  // not mounted on this host, and a directory made here would be seen by no other rank.
  std::error_code ec;
  const auto status = std::filesystem::status(directory_, ec);
  if (!std::filesystem::exists(status))
    throw make_error(
        ErrorCode::kConfig,
        "file store directory '{}' does not exist{}; create it first (TUTTI_STORE=file:DIR "
        "needs a directory that every rank of the job shares, e.g. on a shared filesystem)",
        directory_,
        ec && ec != std::errc::no_such_file_or_directory ? " (" + ec.message() + ")" : "");
  if (!std::filesystem::is_directory(status))
    throw make_error(
        ErrorCode::kConfig,
        "file store directory '{}' is not a directory; TUTTI_STORE=file:DIR needs a directory "
        "that every rank of the job shares",
        directory_);
}

std::string FileStore::path_for(const std::string& key) const {
  // Keys are arbitrary bytes (they may hold '/' or '\0'); names are "key-" plus the key with
  // anything but [A-Za-z0-9._-] written as %XX. The prefix keeps names clear of "." and "..",
  // temp files and the lock file.
  std::string name = "key-";
  for (unsigned char c : key) {
    if (safe_char(c)) {
      name += static_cast<char>(c);
    } else {
      name += fmt::format("%{:02X}", c);
    }
  }
  // File names are limited to 255 bytes; long keys keep a readable head plus a hash of the whole.
  if (name.size() > 200) name = fmt::format("{}~{:016x}", name.substr(0, 160), fnv1a(key));
  return directory_ + "/" + name;
}

void FileStore::set(const std::string& key, const std::string& value) {
  std::string temp = directory_ + "/" + temp_name();
  {
    net::Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd.valid()) throw_system_error(fmt::format("creating '{}'", temp), errno);
    size_t done = 0;
    while (done < value.size()) {
      ssize_t n = ::write(fd.get(), value.data() + done, value.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::unlink(temp.c_str());
        throw_system_error(fmt::format("writing '{}'", temp), err);
      }
      done += static_cast<size_t>(n);
    }
  }
  // rename() is atomic: readers see either no file or the whole value.
  if (::rename(temp.c_str(), path_for(key).c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    throw_system_error(fmt::format("renaming '{}' for key '{}'", temp, key), err);
  }
}

std::string FileStore::get(const std::string& key, Deadline deadline) {
  const std::string path = path_for(key);
  Backoff backoff;
  std::string value;
  while (!read_file(path, &value)) {
    if (!backoff.pause(deadline)) throw get_timeout_error(describe(), key);
  }
  return value;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  FileLock lock(directory_ + "/lock", Deadline::after(lock_timeout_));
  std::string value;
  bool present = read_file(path_for(key), &value);
  int64_t result = add_to_counter(describe(), key, present ? &value : nullptr, delta);
  set(key, std::to_string(result));
  return result;
}

std::vector<std::string> FileStore::missing(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys)
    if (!exists(path_for(k))) out.push_back(k);
  return out;
}

void FileStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  Backoff backoff;
  std::vector<std::string> absent = missing(keys);
  while (!absent.empty()) {
    if (!backoff.pause(deadline)) throw wait_timeout_error(describe(), absent);
    absent = missing(absent);
  }
}

bool FileStore::remove(const std::string& key) {
  if (::unlink(path_for(key).c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  throw_system_error(fmt::format("file store: removing key '{}' ({})", key, path_for(key)), errno);
}

std::string FileStore::describe() const {
  return "file " + directory_;
}

}  // namespace tutti::bootstrap
