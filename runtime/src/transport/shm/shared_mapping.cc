#include "transport/shm/shared_mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "net/fd.hpp"

namespace tutti::transport {
namespace {

// "/dev/shm has 3.2 MiB free of 64 MiB", from the file system that holds `fd`.
std::string space_of(int fd) {
  struct statvfs vfs {};
  if (fstatvfs(fd, &vfs) != 0) return "/dev/shm's free space is unknown";
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t total = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  return fmt::format("/dev/shm has {} free of {}", parse::bytes_text(free_bytes),
                     parse::bytes_text(total));
}

uint64_t free_space(int fd) {
  struct statvfs vfs {};
  if (fstatvfs(fd, &vfs) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

[[noreturn]] void throw_no_room(const std::string& name, size_t bytes,
                                const SegmentPurpose& purpose, const std::string& space) {
  throw make_error(ErrorCode::kSystem,
                   "{}: shared memory /dev/shm{} for {} needs {}, but {}. Give the job a larger "
                   "/dev/shm (docker run --shm-size; in Kubernetes an emptyDir with medium: Memory "
                   "and a sizeLimit, mounted at /dev/shm), run fewer ranks per host, or lower {}",
                   purpose.owner, name, purpose.what, parse::bytes_text(bytes), space,
                   purpose.knob);
}

}  // namespace

SharedMapping SharedMapping::create(const std::string& name, size_t bytes,
                                    const SegmentPurpose& purpose) {
  net::Fd fd(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  if (!fd.valid()) {
    if (errno == EEXIST)
      throw make_error(ErrorCode::kSystem,
                       "{}: shared memory /dev/shm{} already exists: another job with the same "
                       "job id runs on this host, or an earlier one was killed while starting; "
                       "remove the file or set a different TUTTI_JOB_ID",
                       purpose.owner, name);
    throw_system_error(fmt::format("{}: shm_open(/dev/shm{})", purpose.owner, name), errno);
  }
  // From here on the name exists: remove it again if anything fails.
  struct Remover {
    const std::string& name;
    bool armed = true;
    ~Remover() {
      if (armed) shm_unlink(name.c_str());
    }
  } remover{name};
  // A quick refusal before any page is taken, so one rank's failure does not starve the others.
  if (free_space(fd.get()) < bytes) throw_no_room(name, bytes, purpose, space_of(fd.get()));
  // Allocates every page now: when this succeeds, no SIGBUS for lack of room can come later.
  if (int err = posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); err != 0) {
    if (err == ENOSPC) throw_no_room(name, bytes, purpose, space_of(fd.get()));
    if (err != EOPNOTSUPP && err != EINVAL)
      throw_system_error(fmt::format("{}: fallocate(/dev/shm{}, {})", purpose.owner, name,
                                     parse::bytes_text(bytes)),
                         err);
    // A file system without fallocate (tmpfs has it since Linux 3.5): size the file and let the
    // mapping's population allocate the pages.
    if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
      throw_system_error(fmt::format("{}: ftruncate(/dev/shm{})", purpose.owner, name), errno);
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (base == MAP_FAILED)
    throw_system_error(
        fmt::format("{}: mmap(/dev/shm{}, {})", purpose.owner, name, parse::bytes_text(bytes)),
        errno);
  remover.armed = false;
  return SharedMapping(name, static_cast<std::byte*>(base), bytes, bytes, true);
}

SharedMapping SharedMapping::open(const std::string& name, const std::string& owner,
                                  std::string_view hint, size_t offset, size_t length) {
  net::Fd fd(shm_open(name.c_str(), O_RDWR, 0));
  if (!fd.valid())
    throw_system_error(fmt::format("shm_open(/dev/shm{}) of {}; {}", name, owner, hint), errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throw_system_error(fmt::format("fstat(/dev/shm{})", name), errno);
  const size_t file_bytes = static_cast<size_t>(st.st_size);
  if (length == 0) length = file_bytes > offset ? file_bytes - offset : 0;
  if (length == 0 || offset > file_bytes || length > file_bytes - offset)
    throw make_error(ErrorCode::kInternal,
                     "/dev/shm{} of {} has {} bytes; bytes {}..{} of it were expected", name, owner,
                     file_bytes, offset, offset + length);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(),
                    static_cast<off_t>(offset));
  if (base == MAP_FAILED)
    throw_system_error(fmt::format("mmap(/dev/shm{}) of {}", name, owner), errno);
  return SharedMapping(name, static_cast<std::byte*>(base), length, file_bytes, false);
}

SharedMapping::SharedMapping(std::string name, std::byte* base, size_t bytes, size_t file_bytes,
                             bool linked)
    : name_(std::move(name)),
      base_(base),
      bytes_(bytes),
      file_bytes_(file_bytes),
      linked_(linked) {}

SharedMapping::SharedMapping(SharedMapping&& other) noexcept
    : name_(std::move(other.name_)),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      file_bytes_(std::exchange(other.file_bytes_, 0)),
      linked_(std::exchange(other.linked_, false)) {}

SharedMapping& SharedMapping::operator=(SharedMapping&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    file_bytes_ = std::exchange(other.file_bytes_, 0);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

SharedMapping::~SharedMapping() {
  release();
}

void SharedMapping::release() {
  unlink();
  if (base_ != nullptr) munmap(base_, bytes_);
  base_ = nullptr;
}

void SharedMapping::unlink() {
  if (!linked_) return;
  linked_ = false;
  if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT)
    log::warn("could not remove /dev/shm{}: {}", name_, std::strerror(errno));
}

}  // namespace tutti::transport
