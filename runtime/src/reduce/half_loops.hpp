// One-pass loops for 16-bit float types whose conversions vectorize (bfloat16): widen each input,
// apply the op in float, narrow with round-to-nearest-even and store, element by element, so g++
// -O3 keeps everything in vector registers. Same restrict and aliasing rules as loops.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reduce/simd_clones.hpp"

namespace tutti::reduce {

// dst[i] = a[i] op b[i]
template <typename Codec, typename Op>
TUTTI_REDUCE_SIMD_CLONES void half_combine_loop(uint16_t* __restrict dst,
                                                const uint16_t* __restrict a,
                                                const uint16_t* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i)
    dst[i] = Codec::narrow1(Op::apply(Codec::widen1(a[i]), Codec::widen1(b[i])));
}

// dst[i] = dst[i] op src[i]
template <typename Codec, typename Op>
TUTTI_REDUCE_SIMD_CLONES void half_accumulate_loop(uint16_t* __restrict dst,
                                                   const uint16_t* __restrict src, size_t count) {
  for (size_t i = 0; i < count; ++i)
    dst[i] = Codec::narrow1(Op::apply(Codec::widen1(dst[i]), Codec::widen1(src[i])));
}

// dst[i] = src[i] op dst[i]
template <typename Codec, typename Op>
TUTTI_REDUCE_SIMD_CLONES void half_accumulate_reversed_loop(uint16_t* __restrict dst,
                                                            const uint16_t* __restrict src,
                                                            size_t count) {
  for (size_t i = 0; i < count; ++i)
    dst[i] = Codec::narrow1(Op::apply(Codec::widen1(src[i]), Codec::widen1(dst[i])));
}

// dst[i] = dst[i] op dst[i]
template <typename Codec, typename Op>
TUTTI_REDUCE_SIMD_CLONES void half_self_loop(uint16_t* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const float x = Codec::widen1(dst[i]);
    dst[i] = Codec::narrow1(Op::apply(x, x));
  }
}

}  // namespace tutti::reduce
