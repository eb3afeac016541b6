#include "transport/shm/shared_mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "core/log.hpp"
#include "net/fd.hpp"

namespace tutti::transport {

SharedMapping SharedMapping::create(const std::string& name, size_t bytes, std::string_view what,
                                    std::string_view knob) {
  net::Fd fd(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  if (!fd.valid()) {
    if (errno == EEXIST)
      throw make_error(ErrorCode::kSystem,
                       "shared-memory {} /dev/shm{} already exists: another job with the same "
                       "job id runs on this host, or an earlier one was killed while starting; "
                       "remove the file or set a different TUTTI_JOB_ID",
                       what, name);
    throw_system_error(fmt::format("shm_open(/dev/shm{})", name), errno);
  }
  // From here on the name exists: remove it again if anything fails.
  auto fail = [&](const char* call) {
    int err = errno;
    shm_unlink(name.c_str());
    throw_system_error(
        fmt::format("{} of /dev/shm{} ({} bytes; is /dev/shm large enough? lower {})", call, name,
                    bytes, knob),
        err);
  };
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) fail("ftruncate");
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) fail("mmap");
  SharedMapping mapping(name, static_cast<std::byte*>(base), bytes, true);
  // Allocates every tmpfs page now; if this succeeds no SIGBUS for lack of room can come later.
  std::memset(base, 0, bytes);
  return mapping;
}

SharedMapping SharedMapping::open(const std::string& name, const std::string& owner,
                                  std::string_view hint) {
  net::Fd fd(shm_open(name.c_str(), O_RDWR, 0));
  if (!fd.valid())
    throw_system_error(fmt::format("shm_open(/dev/shm{}) of {}; {}", name, owner, hint), errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throw_system_error(fmt::format("fstat(/dev/shm{})", name), errno);
  size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes == 0) throw make_error(ErrorCode::kInternal, "/dev/shm{} of {} is empty", name, owner);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (base == MAP_FAILED)
    throw_system_error(fmt::format("mmap(/dev/shm{}) of {}", name, owner), errno);
  return SharedMapping(name, static_cast<std::byte*>(base), bytes, false);
}

SharedMapping::SharedMapping(std::string name, std::byte* base, size_t bytes, bool linked)
    : name_(std::move(name)), base_(base), bytes_(bytes), linked_(linked) {}

SharedMapping::SharedMapping(SharedMapping&& other) noexcept
    : name_(std::move(other.name_)),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      linked_(std::exchange(other.linked_, false)) {}

SharedMapping& SharedMapping::operator=(SharedMapping&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
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
