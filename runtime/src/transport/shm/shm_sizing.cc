#include "transport/shm/shm_sizing.hpp"

#include <algorithm>
#include <bit>

#include "transport/shm/ring.hpp"

namespace tutti::transport {
namespace {

constexpr size_t kPage = 4096;

}  // namespace

size_t rings_footprint(size_t rings, size_t capacity) {
  return rings * ring_footprint(capacity);
}

size_t ring_capacity_for(size_t local_peers, size_t ring_bytes, size_t ring_budget) {
  size_t capacity = std::bit_ceil(std::max(ring_bytes, kMinRingCapacity));
  while (capacity > kMinRingCapacity && rings_footprint(local_peers, capacity) > ring_budget)
    capacity /= 2;
  return capacity;
}

size_t window_area_for(int ranks, size_t area_bytes, size_t window_budget) {
  if (area_bytes == 0 || ranks < 1) return area_bytes;
  const size_t share = window_budget / static_cast<size_t>(ranks) / kPage * kPage;
  return std::min(area_bytes, share);
}

}  // namespace tutti::transport
