#include "transport/shm/window_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "bootstrap/socket.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport {
namespace {

constexpr uint64_t kWindowMagic = 0x74757474'77696e31;  // "tuttwin1"
constexpr size_t kHeaderBytes = 4096;

struct WindowHeader {
  uint64_t magic;
  uint64_t bytes;  // usable bytes after the header
};

}  // namespace

std::string WindowSegment::name_for(const std::string& job_id) {
  // Reuses the ring segments' escaping of the job id; "window" never collides with a rank number.
  std::string name = ShmSegment::name_for(job_id, 0);
  name.resize(name.size() - 1);
  return name + "window";
}

std::unique_ptr<WindowSegment> WindowSegment::create(const std::string& name, size_t bytes) {
  const size_t mapped = kHeaderBytes + bytes;
  bootstrap::Fd fd(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  if (!fd.valid()) {
    if (errno == EEXIST)
      throw make_error(ErrorCode::kSystem,
                       "shared-memory window /dev/shm{} already exists: another job with the same "
                       "job id runs on this host, or an earlier one was killed while starting; "
                       "remove the file or set a different TUTTI_JOB_ID",
                       name);
    throw_system_error(fmt::format("shm_open(/dev/shm{})", name), errno);
  }
  auto fail = [&](const char* what) {
    int err = errno;
    shm_unlink(name.c_str());
    throw_system_error(fmt::format("{} of /dev/shm{} ({} bytes; is /dev/shm large enough? lower "
                                   "TUTTI_SHM_WINDOW_BYTES, or set it to 0 to go without)",
                                   what, name, mapped),
                       err);
  };
  if (ftruncate(fd.get(), static_cast<off_t>(mapped)) != 0) fail("ftruncate");
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) fail("mmap");
  auto segment =
      std::make_unique<WindowSegment>(Key{}, name, static_cast<std::byte*>(base), mapped, true);
  // Allocates every tmpfs page now (and maps it here); the others map with MAP_POPULATE.
  std::memset(base, 0, mapped);
  auto* header = static_cast<WindowHeader*>(base);
  header->bytes = bytes;
  std::atomic_ref<uint64_t>(header->magic).store(kWindowMagic, std::memory_order_release);
  return segment;
}

std::unique_ptr<WindowSegment> WindowSegment::open(const std::string& name, size_t bytes,
                                                   const std::string& owner) {
  bootstrap::Fd fd(shm_open(name.c_str(), O_RDWR, 0));
  if (!fd.valid())
    throw_system_error(fmt::format("shm_open(/dev/shm{}) of {}; does that rank share this host's "
                                   "/dev/shm? (TUTTI_HOST, or TUTTI_SHM_WINDOW_BYTES=0 otherwise)",
                                   name, owner),
                       errno);
  const size_t mapped = kHeaderBytes + bytes;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throw_system_error(fmt::format("fstat(/dev/shm{})", name), errno);
  if (static_cast<size_t>(st.st_size) != mapped)
    throw make_error(ErrorCode::kInternal, "/dev/shm{} of {} has {} bytes, expected {}", name,
                     owner, st.st_size, mapped);
  void* base =
      mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (base == MAP_FAILED)
    throw_system_error(fmt::format("mmap(/dev/shm{}) of {}", name, owner), errno);
  auto segment =
      std::make_unique<WindowSegment>(Key{}, name, static_cast<std::byte*>(base), mapped, false);
  const auto* header = reinterpret_cast<const WindowHeader*>(base);
  if (std::atomic_ref<const uint64_t>(header->magic).load(std::memory_order_acquire) !=
          kWindowMagic ||
      header->bytes != bytes)
    throw make_error(ErrorCode::kInternal, "/dev/shm{} of {} is not a tutti window of this version",
                     name, owner);
  return segment;
}

WindowSegment::WindowSegment(Key, std::string name, std::byte* base, size_t mapped_bytes,
                             bool owner)
    : name_(std::move(name)), base_(base), mapped_bytes_(mapped_bytes), linked_(owner) {}

WindowSegment::~WindowSegment() {
  unlink();
  munmap(base_, mapped_bytes_);
}

void WindowSegment::unlink() {
  if (!linked_) return;
  linked_ = false;
  if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT)
    log::warn("could not remove /dev/shm{}: {}", name_, std::strerror(errno));
}

std::byte* WindowSegment::data() const {
  return base_ + kHeaderBytes;
}

}  // namespace tutti::transport
