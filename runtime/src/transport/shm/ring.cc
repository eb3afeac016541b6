#include "transport/shm/ring.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tutti::transport {

size_t ring_footprint(size_t capacity) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t bytes = sizeof(RingControl) + capacity;
  return (bytes + page - 1) / page * page;
}

ShmRing::ShmRing(std::byte* base, size_t capacity)
    : control_(reinterpret_cast<RingControl*>(base)),
      data_(base + sizeof(RingControl)),
      capacity_(capacity) {
  cached_head_ = head().load(std::memory_order_acquire);
  cached_tail_ = tail().load(std::memory_order_acquire);
}

size_t ShmRing::write(ConstPieces pieces) {
  const size_t room = this->room();
  if (room == 0) return 0;
  const uint64_t h = head().load(std::memory_order_relaxed);  // we are its only writer
  size_t written = 0;
  for (const auto& piece : pieces) {
    size_t n = std::min(piece.size(), room - written);
    if (n == 0) continue;
    size_t offset = (h + written) & (capacity_ - 1);
    size_t first = std::min(n, capacity_ - offset);
    std::memcpy(data_ + offset, piece.data(), first);
    std::memcpy(data_, piece.data() + first, n - first);
    written += n;
    if (written == room) break;
  }
  if (written > 0) head().store(h + written, std::memory_order_release);
  return written;
}

size_t ShmRing::read(Pieces pieces) {
  const size_t available = this->available();
  if (available == 0) return 0;
  const uint64_t t = tail().load(std::memory_order_relaxed);  // we are its only writer
  size_t taken = 0;
  for (const auto& piece : pieces) {
    size_t n = std::min(piece.size(), available - taken);
    if (n == 0) continue;
    size_t offset = (t + taken) & (capacity_ - 1);
    size_t first = std::min(n, capacity_ - offset);
    std::memcpy(piece.data(), data_ + offset, first);
    std::memcpy(piece.data() + first, data_, n - first);
    taken += n;
    if (taken == available) break;
  }
  if (taken > 0) tail().store(t + taken, std::memory_order_release);
  return taken;
}

size_t ShmRing::room() {
  const uint64_t h = head().load(std::memory_order_relaxed);  // the producer's own counter
  if (h - cached_tail_ == capacity_) cached_tail_ = tail().load(std::memory_order_acquire);
  return capacity_ - (h - cached_tail_);
}

size_t ShmRing::available() {
  const uint64_t t = tail().load(std::memory_order_relaxed);  // the consumer's own counter
  if (cached_head_ == t) cached_head_ = head().load(std::memory_order_acquire);
  return cached_head_ - t;
}

bool ShmRing::readable() const {
  return head().load(std::memory_order_acquire) != tail().load(std::memory_order_relaxed);
}

}  // namespace tutti::transport
