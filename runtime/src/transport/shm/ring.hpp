// ShmRing: a single-producer/single-consumer byte ring inside a shared-memory segment. Head and
// tail are free-running 64-bit counters on their own cache lines (acquire/release), the capacity is
// a power of two, and each side caches the other's counter to touch the shared line less often.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "transport/byte_stream.hpp"
#include "transport/shm/doorbell.hpp"

namespace tutti::transport {

// Counters of one ring, as laid out in shared memory. 128-byte separation also keeps the adjacent-
// line prefetcher from pairing them.
struct alignas(128) RingControl {
  alignas(128) uint64_t head;  // bytes ever written; only the producer stores it
  alignas(128) uint64_t tail;  // bytes ever read; only the consumer stores it
  // Sleepers on each counter (doorbell.hpp): the consumer's on head, the producer's on tail. Each
  // side raises and lowers its own; the other side reads it after every move of its counter, so
  // they live apart from the counters' lines.
  alignas(128) uint32_t head_sleepers;
  uint32_t tail_sleepers;
};
static_assert(sizeof(RingControl) == 384);
// A doorbell is a counter's low half.
static_assert(std::endian::native == std::endian::little);

// Bytes one ring occupies in a segment (control + data), page-aligned.
size_t ring_footprint(size_t capacity);

// One side's view of a ring; the producer uses write(), the consumer read().
class ShmRing {
 public:
  ShmRing() = default;
  ShmRing(std::byte* base, size_t capacity);  // base: the ring's RingControl, data follows

  size_t write(ConstPieces pieces);
  size_t read(Pieces pieces);
  // True when bytes are waiting to be read (a fresh look at the producer's counter).
  bool readable() const;
  // The producer's room and the consumer's fill, each from a fresh look at the other side's
  // counter when the cached one shows none.
  size_t room();
  size_t available();
  size_t capacity() const { return capacity_; }
  // Doorbells (doorbell.hpp): the consumer's on head, once the ring is empty; the producer's on
  // tail, once it is full. Each raises its side's sleepers, then looks at the counter again: false
  // (and lowered) when bytes or room came meanwhile, so the caller looks instead of sleeping.
  bool arm_reader(Doorbell& bell);
  bool arm_writer(Doorbell& bell);

 private:
  std::atomic_ref<uint64_t> head() const { return std::atomic_ref<uint64_t>(control_->head); }
  std::atomic_ref<uint64_t> tail() const { return std::atomic_ref<uint64_t>(control_->tail); }
  // Stores a side's new counter (releasing the bytes or room it covers) and wakes the other side
  // if it sleeps on it.
  static void publish(uint64_t& counter, uint64_t value, uint32_t& sleepers);

  RingControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  uint64_t cached_head_ = 0;  // consumer: last producer counter seen
  uint64_t cached_tail_ = 0;  // producer: last consumer counter seen
};

}  // namespace tutti::transport
