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
  if (written > 0) publish(control_->head, h + written, control_->head_sleepers);
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
  if (taken > 0) publish(control_->tail, t + taken, control_->tail_sleepers);
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

namespace {

uint32_t* low_word(uint64_t& counter) {
  return reinterpret_cast<uint32_t*>(&counter);
}

// The sleeper's half of the handshake with publish(): it raises the count, then looks at the
// counter; the mover stores the counter, then looks at the count. All four are sequentially
// consistent (not fences, which ThreadSanitizer cannot follow), so in their one order either the
// sleeper sees the move or the mover sees the sleeper.
bool arm(uint64_t& counter, uint32_t& sleepers, Doorbell& bell, auto&& ready) {
  std::atomic_ref<uint32_t>(sleepers).fetch_add(1, std::memory_order_seq_cst);
  const uint64_t now = std::atomic_ref<uint64_t>(counter).load(std::memory_order_seq_cst);
  if (ready(now)) {
    std::atomic_ref<uint32_t>(sleepers).fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  bell = {low_word(counter), static_cast<uint32_t>(now), &sleepers};
  return true;
}

}  // namespace

void ShmRing::publish(uint64_t& counter, uint64_t value, uint32_t& sleepers) {
  std::atomic_ref<uint64_t>(counter).store(value, std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(sleepers).load(std::memory_order_seq_cst) != 0)
    ring_doorbell(low_word(counter));
}

bool ShmRing::arm_reader(Doorbell& bell) {
  const uint64_t t = tail().load(std::memory_order_relaxed);  // the consumer's own counter
  return arm(control_->head, control_->head_sleepers, bell, [&](uint64_t h) { return h != t; });
}

bool ShmRing::arm_writer(Doorbell& bell) {
  const uint64_t h = head().load(std::memory_order_relaxed);  // the producer's own counter
  return arm(control_->tail, control_->tail_sleepers, bell,
             [&](uint64_t t) { return h - t < capacity_; });
}

bool ShmRing::readable() const {
  return head().load(std::memory_order_acquire) != tail().load(std::memory_order_relaxed);
}

}  // namespace tutti::transport
