#include "transport/shm/segment.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>

#include "core/error.hpp"
#include "transport/shm/ring.hpp"
#include "transport/shm/shm_sizing.hpp"

namespace tutti::transport {
namespace {

constexpr uint64_t kSegmentMagic = 0x74757474'73686d33;  // "tuttishm3": rings with doorbells
constexpr size_t kHeaderBytes = 4096;

struct SegmentHeader {
  uint64_t magic;
  uint64_t rings;
  uint64_t ring_capacity;
  uint64_t ring_stride;
};

constexpr const char* kOpenHint =
    "does that rank share this host's /dev/shm? (TUTTI_HOST / TUTTI_TRANSPORT=tcp otherwise)";

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

ShmSegment::ShmSegment(Key, SharedMapping mapping, size_t rings_offset, size_t first_ring,
                       size_t mapped_rings, size_t ring_capacity, size_t ring_stride)
    : mapping_(std::move(mapping)),
      first_ring_base_(mapping_.base() + rings_offset),
      first_ring_(first_ring),
      mapped_rings_(mapped_rings),
      ring_capacity_(ring_capacity),
      ring_stride_(ring_stride) {}

std::unique_ptr<ShmSegment> ShmSegment::create(const std::string& name, size_t rings,
                                               size_t ring_capacity,
                                               const SegmentPurpose& purpose) {
  if (!std::has_single_bit(ring_capacity) || ring_capacity < kMinRingCapacity)
    throw make_error(ErrorCode::kInternal, "ring capacity {} is not a power of two >= {}",
                     ring_capacity, kMinRingCapacity);
  const size_t stride = ring_footprint(ring_capacity);
  SharedMapping mapping = SharedMapping::create(name, kHeaderBytes + rings * stride, purpose);
  auto* header = reinterpret_cast<SegmentHeader*>(mapping.base());
  header->rings = rings;
  header->ring_capacity = ring_capacity;
  header->ring_stride = stride;
  std::atomic_ref<uint64_t>(header->magic).store(kSegmentMagic, std::memory_order_release);
  return std::make_unique<ShmSegment>(Key{}, std::move(mapping), kHeaderBytes, 0, rings,
                                      ring_capacity, stride);
}

std::unique_ptr<ShmSegment> ShmSegment::open_ring(const std::string& name, const std::string& owner,
                                                  size_t index) {
  SegmentHeader h{};
  size_t file_bytes = 0;
  {
    SharedMapping head = SharedMapping::open(name, owner, kOpenHint, 0, kHeaderBytes);
    const auto& mapped = *reinterpret_cast<const SegmentHeader*>(head.base());
    h.magic = std::atomic_ref<const uint64_t>(mapped.magic).load(std::memory_order_acquire);
    h.rings = mapped.rings;
    h.ring_capacity = mapped.ring_capacity;
    h.ring_stride = mapped.ring_stride;
    file_bytes = head.file_bytes();
  }
  // Division, not rings * stride: the header is the peer's memory, and a product could wrap.
  if (h.magic != kSegmentMagic || !std::has_single_bit(h.ring_capacity) ||
      h.ring_capacity > file_bytes || h.ring_stride != ring_footprint(h.ring_capacity) ||
      file_bytes < kHeaderBytes || h.rings > (file_bytes - kHeaderBytes) / h.ring_stride)
    throw make_error(ErrorCode::kInternal,
                     "/dev/shm{} of {} is not a tutti segment of this version", name, owner);
  if (index >= h.rings)
    throw make_error(ErrorCode::kInternal, "ring {} of /dev/shm{} of {} (it has {})", index, name,
                     owner, h.rings);
  SharedMapping ring = SharedMapping::open(name, owner, kOpenHint,
                                           kHeaderBytes + index * h.ring_stride, h.ring_stride);
  return std::make_unique<ShmSegment>(Key{}, std::move(ring), 0, index, 1, h.ring_capacity,
                                      h.ring_stride);
}

std::byte* ShmSegment::ring(size_t index) const {
  if (index < first_ring_ || index - first_ring_ >= mapped_rings_)
    throw make_error(ErrorCode::kInternal, "ring {} of /dev/shm{} is not mapped here ({}..{} are)",
                     index, name(), first_ring_, first_ring_ + mapped_rings_);
  return first_ring_base_ + (index - first_ring_) * ring_stride_;
}

}  // namespace tutti::transport
