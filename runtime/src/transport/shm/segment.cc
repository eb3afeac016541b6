#include "transport/shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "bootstrap/socket.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "transport/shm/ring.hpp"

namespace tutti::transport {
namespace {

constexpr uint64_t kSegmentMagic = 0x74757474'73686d31;  // "tuttishm1"
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kMinRingBytes = 4096;

struct SegmentHeader {
  uint64_t magic;
  uint64_t rings;
  uint64_t ring_capacity;
  uint64_t ring_stride;
};

const SegmentHeader& header_of(const std::byte* base) {
  return *reinterpret_cast<const SegmentHeader*>(base);
}

}  // namespace

std::string ShmSegment::name_for(const std::string& job_id, int rank) {
  std::string name = "/tutti-";
  for (char c : job_id) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.';
    name += safe ? c : '_';
  }
  return name + "-" + std::to_string(rank);
}

std::unique_ptr<ShmSegment> ShmSegment::create(const std::string& name, size_t rings,
                                               size_t ring_capacity) {
  size_t capacity = std::bit_ceil(std::max(ring_capacity, kMinRingBytes));
  size_t stride = ring_footprint(capacity);
  size_t bytes = kHeaderBytes + rings * stride;
  bootstrap::Fd fd(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  if (!fd.valid()) {
    if (errno == EEXIST)
      throw make_error(ErrorCode::kSystem,
                       "shared-memory segment /dev/shm{} already exists: another job with the same "
                       "job id runs on this host, or an earlier one was killed while starting; "
                       "remove the file or set a different TUTTI_JOB_ID",
                       name);
    throw_system_error(fmt::format("shm_open(/dev/shm{})", name), errno);
  }
  // From here on the name exists: the segment object removes it if anything fails.
  auto fail = [&](const char* what) {
    int err = errno;
    shm_unlink(name.c_str());
    throw_system_error(fmt::format("{} of /dev/shm{} ({} bytes; is /dev/shm large enough? lower "
                                   "TUTTI_SHM_RING_BYTES otherwise)",
                                   what, name, bytes),
                       err);
  };
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) fail("ftruncate");
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) fail("mmap");
  auto segment =
      std::make_unique<ShmSegment>(Key{}, name, static_cast<std::byte*>(base), bytes, true);
  // Touch every page now: a first touch costs ~1 us per 4 KiB, which must not land in a collective.
  // (tmpfs has no room problem it could report later as SIGBUS if this succeeds.)
  std::memset(base, 0, bytes);
  auto* header = static_cast<SegmentHeader*>(base);
  header->rings = rings;
  header->ring_capacity = capacity;
  header->ring_stride = stride;
  std::atomic_ref<uint64_t>(header->magic).store(kSegmentMagic, std::memory_order_release);
  return segment;
}

std::unique_ptr<ShmSegment> ShmSegment::open(const std::string& name, const std::string& owner) {
  bootstrap::Fd fd(shm_open(name.c_str(), O_RDWR, 0));
  if (!fd.valid())
    throw_system_error(fmt::format("shm_open(/dev/shm{}) of {}; does that rank share this host's "
                                   "/dev/shm? (TUTTI_HOST / TUTTI_TRANSPORT=tcp otherwise)",
                                   name, owner),
                       errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throw_system_error(fmt::format("fstat(/dev/shm{})", name), errno);
  size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes < kHeaderBytes)
    throw make_error(ErrorCode::kInternal, "/dev/shm{} of {} is only {} bytes", name, owner, bytes);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (base == MAP_FAILED)
    throw_system_error(fmt::format("mmap(/dev/shm{}) of {}", name, owner), errno);
  auto segment =
      std::make_unique<ShmSegment>(Key{}, name, static_cast<std::byte*>(base), bytes, false);
  const SegmentHeader& h = header_of(segment->base_);
  if (std::atomic_ref<const uint64_t>(h.magic).load(std::memory_order_acquire) != kSegmentMagic ||
      kHeaderBytes + h.rings * h.ring_stride > bytes || !std::has_single_bit(h.ring_capacity))
    throw make_error(ErrorCode::kInternal,
                     "/dev/shm{} of {} is not a tutti segment of this version", name, owner);
  return segment;
}

ShmSegment::ShmSegment(Key, std::string name, std::byte* base, size_t bytes, bool owner)
    : name_(std::move(name)), base_(base), bytes_(bytes), linked_(owner) {}

ShmSegment::~ShmSegment() {
  unlink();
  munmap(base_, bytes_);
}

void ShmSegment::unlink() {
  if (!linked_) return;
  linked_ = false;
  if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT)
    log::warn("could not remove /dev/shm{}: {}", name_, std::strerror(errno));
}

size_t ShmSegment::rings() const {
  return header_of(base_).rings;
}
size_t ShmSegment::ring_capacity() const {
  return header_of(base_).ring_capacity;
}

std::byte* ShmSegment::ring(size_t index) const {
  if (index >= rings())
    throw make_error(ErrorCode::kInternal, "ring {} of /dev/shm{} (it has {})", index, name_,
                     rings());
  return base_ + kHeaderBytes + index * header_of(base_).ring_stride;
}

}  // namespace tutti::transport
