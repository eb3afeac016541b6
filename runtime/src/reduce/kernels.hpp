// Typed kernels behind reduce.hpp. An element policy (NativeElements, HalfElements) says how one
// element type is reduced on aligned storage; Kernel adds the type-erased entry points, the
// aliasing rules of combine(), and a detour through aligned stack blocks for misaligned buffers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "reduce/half.hpp"
#include "reduce/half_loops.hpp"
#include "reduce/loops.hpp"
#include "reduce/stream_stores.hpp"

namespace tutti::reduce {

// Elements per stack block: 256 floats per buffer keeps every block in L1 and the stack small.
inline constexpr size_t kBlockElements = 256;
// Bytes per block of reduce_many's partial result: two such stack blocks stay in a 32 KiB L1.
inline constexpr size_t kManyBlockBytes = 4096;

// float, double and the integer types: reduced in place, in their own type.
template <typename T>
struct NativeElements {
  using Storage = T;

  template <typename Op>
  static void accumulate(T* dst, const T* src, size_t count) {
    if (dst == src) {
      self_loop<Op>(dst, count);
    } else {
      accumulate_loop<Op>(dst, src, count);
    }
  }

  // Exact aliasing is routed to the loop whose restrict promises hold.
  template <typename Op>
  static void combine(T* dst, const T* a, const T* b, size_t count) {
    if (dst == a && dst == b) {
      self_loop<Op>(dst, count);
    } else if (dst == a) {
      accumulate_loop<Op>(dst, b, count);
    } else if (dst == b) {
      accumulate_reversed_loop<Op>(dst, a, count);
    } else {
      combine_loop<Op>(dst, a, b, count);
    }
  }

  static void divide(T* buf, size_t count, int divisor) { divide_loop(buf, count, divisor); }
};

struct Float16Codec {
  static void widen(const uint16_t* in, float* out, size_t n) { widen_f16(in, out, n); }
  static void narrow(const float* in, uint16_t* out, size_t n) { narrow_f16(in, out, n); }
};

// bfloat16 converts with a shift and an integer rounding step, which vectorize inside the reduce
// loop itself: one pass per element instead of four passes over float blocks.
struct BFloat16Codec {
  static constexpr bool kFusedLoops = true;
  static float widen1(uint16_t h) { return bf16_to_float(h); }
  static uint16_t narrow1(float f) { return float_to_bf16(f); }
  static void widen(const uint16_t* in, float* out, size_t n) { widen_bf16(in, out, n); }
  static void narrow(const float* in, uint16_t* out, size_t n) { narrow_bf16(in, out, n); }
};

template <typename Codec>
concept FusedHalfCodec = Codec::kFusedLoops;

// float16/bfloat16: each block is widened to float, reduced there, and narrowed once (round to
// nearest even), so every step rounds exactly like one float op followed by a conversion. Both
// inputs are read into their own buffers before the output is written, so any exact aliasing is
// safe.
template <typename Codec>
struct HalfElements {
  using Storage = uint16_t;

  template <typename Op>
  static void accumulate(uint16_t* dst, const uint16_t* src, size_t count) {
    combine<Op>(dst, dst, src, count);
  }

  template <typename Op>
  static void combine(uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t count) {
    if constexpr (FusedHalfCodec<Codec>) {
      // Exact aliasing is routed to the loop whose restrict promises hold.
      if (dst == a && dst == b) {
        half_self_loop<Codec, Op>(dst, count);
      } else if (dst == a) {
        half_accumulate_loop<Codec, Op>(dst, b, count);
      } else if (dst == b) {
        half_accumulate_reversed_loop<Codec, Op>(dst, a, count);
      } else {
        half_combine_loop<Codec, Op>(dst, a, b, count);
      }
      return;
    }
    alignas(64) float fa[kBlockElements];
    alignas(64) float fb[kBlockElements];
    for (size_t done = 0; done < count; done += kBlockElements) {
      const size_t n = std::min(kBlockElements, count - done);
      Codec::widen(a + done, fa, n);
      Codec::widen(b + done, fb, n);
      accumulate_loop<Op>(fa, fb, n);
      Codec::narrow(fa, dst + done, n);
    }
  }

  static void divide(uint16_t* buf, size_t count, int divisor) {
    alignas(64) float f[kBlockElements];
    for (size_t done = 0; done < count; done += kBlockElements) {
      const size_t n = std::min(kBlockElements, count - done);
      Codec::widen(buf + done, f, n);
      divide_loop(f, n, divisor);
      Codec::narrow(f, buf + done, n);
    }
  }
};

template <typename S>
bool is_aligned_for(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % alignof(S) == 0;
}

// Type-erased entry points. Buffers that are not aligned for their element type (a byte offset
// into a fusion buffer, say) cannot be dereferenced as that type, so they are copied through
// aligned stack blocks; the common aligned case goes straight to the element loops.
template <typename Elements, typename Op>
struct Kernel {
  using S = typename Elements::Storage;
  static constexpr size_t kSize = sizeof(S);

  static void accumulate(void* dst, const void* src, size_t count) {
    if (is_aligned_for<S>(dst) && is_aligned_for<S>(src)) {
      Elements::template accumulate<Op>(static_cast<S*>(dst), static_cast<const S*>(src), count);
    } else {
      combine_misaligned(dst, dst, src, count);
    }
  }

  static void combine(void* dst, const void* a, const void* b, size_t count) {
    if (is_aligned_for<S>(dst) && is_aligned_for<S>(a) && is_aligned_for<S>(b)) {
      Elements::template combine<Op>(static_cast<S*>(dst), static_cast<const S*>(a),
                                     static_cast<const S*>(b), count);
    } else {
      combine_misaligned(dst, a, b, count);
    }
  }

  // out = srcs[0] op ... op srcs[n-1] (and the same to copy), block by block: each block's partial
  // result stays in L1 (in out itself, or in a stack buffer when out is also a later source or is
  // written with streaming stores), so every source is read once from memory and every output
  // written once. On the stack-buffer path sources not aligned for S are copied into an aligned
  // block first.
  static void many(void* out, void* copy, const void* const* srcs, size_t nsrc, size_t count,
                   bool stream, bool stream_out) {
    constexpr size_t kMany = kManyBlockBytes / kSize;
    alignas(64) S acc[kMany];
    alignas(64) S tmp[kMany];
    auto* o = static_cast<std::byte*>(out);
    auto* c = static_cast<std::byte*>(copy);
    // Straight into out unless out is a later source (storing a block of it before reading it).
    bool direct = nsrc >= 2 && !stream_out;
    for (size_t k = 2; k < nsrc; ++k) direct = direct && srcs[k] != out;
    if (direct) {
      const auto* s0 = static_cast<const std::byte*>(srcs[0]);
      const auto* s1 = static_cast<const std::byte*>(srcs[1]);
      for (size_t done = 0; done < count; done += kMany) {
        const size_t n = std::min(kMany, count - done);
        const size_t at = done * kSize, bytes = n * kSize;
        combine(o + at, s0 + at, s1 + at, n);
        for (size_t k = 2; k < nsrc; ++k)
          accumulate(o + at, static_cast<const std::byte*>(srcs[k]) + at, n);
        if (c != nullptr) {
          if (stream) {
            stream_copy_unfenced(c + at, o + at, bytes);
          } else {
            std::memcpy(c + at, o + at, bytes);
          }
        }
      }
      if (c != nullptr && stream) store_fence();
      return;
    }
    for (size_t done = 0; done < count; done += kMany) {
      const size_t n = std::min(kMany, count - done);
      const size_t at = done * kSize, bytes = n * kSize;
      auto source = [&](size_t k) -> const S* {
        const std::byte* p = static_cast<const std::byte*>(srcs[k]) + at;
        if (is_aligned_for<S>(p)) return reinterpret_cast<const S*>(p);
        std::memcpy(tmp, p, bytes);
        return tmp;
      };
      const std::byte* first = static_cast<const std::byte*>(srcs[0]) + at;
      if (nsrc >= 2 && is_aligned_for<S>(first)) {
        Elements::template combine<Op>(acc, reinterpret_cast<const S*>(first), source(1), n);
      } else {
        std::memcpy(acc, first, bytes);
        if (nsrc >= 2) Elements::template accumulate<Op>(acc, source(1), n);
      }
      for (size_t k = 2; k < nsrc; ++k) Elements::template accumulate<Op>(acc, source(k), n);
      if (stream_out) {
        stream_copy_unfenced(o + at, acc, bytes);
      } else {
        std::memcpy(o + at, acc, bytes);
      }
      if (c != nullptr) {
        if (stream) {
          stream_copy_unfenced(c + at, acc, bytes);
        } else {
          std::memcpy(c + at, acc, bytes);
        }
      }
    }
    if (stream_out || (c != nullptr && stream)) store_fence();
  }

  static void divide(void* buf, size_t count, int divisor) {
    if (is_aligned_for<S>(buf)) {
      Elements::divide(static_cast<S*>(buf), count, divisor);
      return;
    }
    alignas(64) S block[kBlockElements];
    auto* bytes = static_cast<std::byte*>(buf);
    for (size_t done = 0; done < count; done += kBlockElements) {
      const size_t n = std::min(kBlockElements, count - done);
      std::memcpy(block, bytes + done * kSize, n * kSize);
      Elements::divide(block, n, divisor);
      std::memcpy(bytes + done * kSize, block, n * kSize);
    }
  }

 private:
  // Both inputs are copied out before the block is written back, so dst may alias a or b.
  static void combine_misaligned(void* dst, const void* a, const void* b, size_t count) {
    alignas(64) S block_a[kBlockElements];
    alignas(64) S block_b[kBlockElements];
    auto* out = static_cast<std::byte*>(dst);
    const auto* in_a = static_cast<const std::byte*>(a);
    const auto* in_b = static_cast<const std::byte*>(b);
    for (size_t done = 0; done < count; done += kBlockElements) {
      const size_t n = std::min(kBlockElements, count - done);
      std::memcpy(block_a, in_a + done * kSize, n * kSize);
      std::memcpy(block_b, in_b + done * kSize, n * kSize);
      Elements::template accumulate<Op>(block_a, block_b, n);
      std::memcpy(out + done * kSize, block_a, n * kSize);
    }
  }
};

}  // namespace tutti::reduce
