#include "transport/shm/segment.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>

#include "core/error.hpp"
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
  auto segment =
      std::make_unique<ShmSegment>(Key{}, SharedMapping::create(name, kHeaderBytes + rings * stride,
                                                                "segment", "TUTTI_SHM_RING_BYTES"));
  auto* header = reinterpret_cast<SegmentHeader*>(segment->mapping_.base());
  header->rings = rings;
  header->ring_capacity = capacity;
  header->ring_stride = stride;
  std::atomic_ref<uint64_t>(header->magic).store(kSegmentMagic, std::memory_order_release);
  return segment;
}

std::unique_ptr<ShmSegment> ShmSegment::open(const std::string& name, const std::string& owner) {
  auto segment = std::make_unique<ShmSegment>(
      Key{}, SharedMapping::open(name, owner,
                                 "does that rank share this host's /dev/shm? (TUTTI_HOST / "
                                 "TUTTI_TRANSPORT=tcp otherwise)"));
  const size_t bytes = segment->mapping_.bytes();
  const SegmentHeader& h = header_of(segment->mapping_.base());
  if (bytes < kHeaderBytes ||
      std::atomic_ref<const uint64_t>(h.magic).load(std::memory_order_acquire) != kSegmentMagic ||
      kHeaderBytes + h.rings * h.ring_stride > bytes || !std::has_single_bit(h.ring_capacity))
    throw make_error(ErrorCode::kInternal,
                     "/dev/shm{} of {} is not a tutti segment of this version", name, owner);
  return segment;
}

size_t ShmSegment::rings() const {
  return header_of(mapping_.base()).rings;
}
size_t ShmSegment::ring_capacity() const {
  return header_of(mapping_.base()).ring_capacity;
}

std::byte* ShmSegment::ring(size_t index) const {
  if (index >= rings())
    throw make_error(ErrorCode::kInternal, "ring {} of /dev/shm{} (it has {})", index, name(),
                     rings());
  return mapping_.base() + kHeaderBytes + index * header_of(mapping_.base()).ring_stride;
}

}  // namespace tutti::transport
