// Non-temporal copies for data that another core reads next (the shared-memory window): the
// stores skip this core's cache and the read-for-ownership of the destination lines, which costs
// more than the copy itself when the reading core sits far away. Unfenced: the caller issues one
// store_fence() after a run of them, before the release store that publishes the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tutti::reduce {

inline void stream_copy_unfenced(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* out = static_cast<std::byte*>(dst);
  const auto* in = static_cast<const std::byte*>(src);
  // Ordinary stores up to the destination's first 16-byte boundary (movntdq needs it).
  size_t head = (16 - reinterpret_cast<uintptr_t>(out) % 16) % 16;
  if (head > bytes) head = bytes;
  std::memcpy(out, in, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 48), d);
  }
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
  std::memcpy(out + i, in + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Orders earlier streaming stores before later stores (they are weakly ordered otherwise).
inline void store_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace tutti::reduce
