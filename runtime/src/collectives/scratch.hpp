// Scratch memory reused across collective calls: buffers grow to the largest size asked for and are
// pre-faulted once, because first touch of fresh memory costs ~1 us per 4 KiB page on these
// machines.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace tutti::collectives {

class Scratch {
 public:
  // Buffer number `slot` with at least `bytes` bytes, 64-byte aligned. Contents are unspecified.
  std::span<std::byte> get(size_t slot, size_t bytes);
  // Bytes held by every slot together (what the collectives keep between calls).
  size_t bytes_held() const;

 private:
  struct Buffer {
    std::unique_ptr<std::byte[]> storage;
    std::byte* aligned = nullptr;
    size_t capacity = 0;
  };
  std::vector<Buffer> buffers_;
};

}  // namespace tutti::collectives
