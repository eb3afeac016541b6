#include "collectives/scratch.hpp"

#include <cstdint>

namespace tutti::collectives {
namespace {

// Cache-line alignment keeps the vectorized reduction kernels on aligned loads and keeps two
// buffers from sharing a line.
constexpr size_t kAlignment = 64;
// Touching one byte every 4 KiB faults in every page even where pages are larger.
constexpr size_t kPageStride = 4096;

}  // namespace

std::span<std::byte> Scratch::get(size_t slot, size_t bytes) {
  if (slot >= buffers_.size()) buffers_.resize(slot + 1);
  Buffer& buffer = buffers_[slot];
  if (bytes > buffer.capacity) {
    // for_overwrite: no memset of the whole buffer; the page-touch loop below is what faults it in.
    auto storage = std::make_unique_for_overwrite<std::byte[]>(bytes + kAlignment - 1);
    auto address = reinterpret_cast<uintptr_t>(storage.get());
    auto* aligned = storage.get() + ((kAlignment - address % kAlignment) % kAlignment);
    // Pre-fault now, once, so that no collective pays first-touch page faults on its hot path.
    volatile std::byte* touch = aligned;
    for (size_t offset = 0; offset < bytes; offset += kPageStride) touch[offset] = std::byte{0};
    touch[bytes - 1] = std::byte{0};
    buffer.storage = std::move(storage);
    buffer.aligned = aligned;
    buffer.capacity = bytes;
  }
  return {buffer.aligned, bytes};
}

size_t Scratch::bytes_held() const {
  size_t total = 0;
  for (const Buffer& b : buffers_) total += b.capacity;
  return total;
}

}  // namespace tutti::collectives
