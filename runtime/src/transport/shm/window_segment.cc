#include "transport/shm/window_segment.hpp"

#include <atomic>
#include <cstdint>

#include "core/error.hpp"
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

std::unique_ptr<WindowSegment> WindowSegment::create(const std::string& name, size_t bytes,
                                                     const SegmentPurpose& purpose) {
  auto segment = std::make_unique<WindowSegment>(
      Key{}, SharedMapping::create(name, kHeaderBytes + bytes, purpose));
  auto* header = reinterpret_cast<WindowHeader*>(segment->mapping_.base());
  header->bytes = bytes;
  std::atomic_ref<uint64_t>(header->magic).store(kWindowMagic, std::memory_order_release);
  return segment;
}

std::unique_ptr<WindowSegment> WindowSegment::open(const std::string& name, size_t bytes,
                                                   const std::string& owner) {
  auto segment = std::make_unique<WindowSegment>(
      Key{}, SharedMapping::open(name, owner,
                                 "does that rank share this host's /dev/shm? (TUTTI_HOST, or "
                                 "TUTTI_SHM_WINDOW_BYTES=0 otherwise)"));
  const size_t mapped = kHeaderBytes + bytes;
  if (segment->mapping_.bytes() != mapped)
    throw make_error(ErrorCode::kInternal, "/dev/shm{} of {} has {} bytes, expected {}", name,
                     owner, segment->mapping_.bytes(), mapped);
  const auto* header = reinterpret_cast<const WindowHeader*>(segment->mapping_.base());
  if (std::atomic_ref<const uint64_t>(header->magic).load(std::memory_order_acquire) !=
          kWindowMagic ||
      header->bytes != bytes)
    throw make_error(ErrorCode::kInternal, "/dev/shm{} of {} is not a tutti window of this version",
                     name, owner);
  return segment;
}

std::byte* WindowSegment::data() const {
  return mapping_.base() + kHeaderBytes;
}

}  // namespace tutti::transport
