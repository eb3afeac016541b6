#include "core/buffer_overlap.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tutti {

ByteRange ByteRange::of(const void* p, size_t count, DataType type, size_t blocks) {
  size_t bytes = 0;
  if (p == nullptr || !valid(type) || __builtin_mul_overflow(count, element_size(type), &bytes) ||
      __builtin_mul_overflow(bytes, blocks, &bytes))
    return {};
  const auto begin = reinterpret_cast<uintptr_t>(p);
  uintptr_t end = 0;
  if (__builtin_add_overflow(begin, bytes, &end)) return {};
  return {begin, bytes};
}

uintptr_t ByteRange::at(const void* p, size_t blocks, size_t count, DataType type) {
  size_t bytes = 0;
  uintptr_t address = 0;
  if (p == nullptr || !valid(type) || __builtin_mul_overflow(blocks, count, &bytes) ||
      __builtin_mul_overflow(bytes, element_size(type), &bytes) ||
      __builtin_add_overflow(reinterpret_cast<uintptr_t>(p), bytes, &address))
    return 0;
  return address;
}

bool overlaps(ByteRange a, ByteRange b) {
  if (a.bytes == 0 || b.bytes == 0) return false;
  // Ranges that fit the address space (ByteRange::of): begin + bytes does not wrap.
  return a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes;
}

void refuse_overlap(std::string_view call, int rank, ByteRange send, ByteRange recv,
                    bool in_place_layout, std::string_view in_place) {
  if (in_place_layout || !overlaps(send, recv)) return;
  const uintptr_t shared_begin = std::max(send.begin, recv.begin);
  const uintptr_t shared_end = std::min(send.begin + send.bytes, recv.begin + recv.bytes);
  throw make_error(ErrorCode::kInvalidArgument,
                   "{} on rank {}: send [{:#x}, {:#x}) ({} bytes) and recv [{:#x}, {:#x}) ({} "
                   "bytes) overlap in {} bytes, so the call would write over input it has yet "
                   "to read. Pass buffers that do not overlap, or {}",
                   call, rank, send.begin, send.begin + send.bytes, send.bytes, recv.begin,
                   recv.begin + recv.bytes, recv.bytes, shared_end - shared_begin, in_place);
}

}  // namespace tutti
