// The innermost loops: one ReduceOp over contiguous, element-aligned, non-overlapping arrays. Kept
// this plain (restrict pointers, counted loop, op inlined) so that g++ -O3 vectorizes each of them;
// everything about aliasing, alignment and half precision is decided by the callers.
#pragma once

#include <cstddef>
#include <type_traits>

#include "reduce/simd_clones.hpp"

namespace tutti::reduce {

// dst[i] = dst[i] op src[i]
template <typename Op, typename T>
TUTTI_REDUCE_SIMD_CLONES void accumulate_loop(T* __restrict dst, const T* __restrict src,
                                              size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(dst[i], src[i]);
}

// dst[i] = src[i] op dst[i]: the operand order of combine() when dst is its second input.
template <typename Op, typename T>
TUTTI_REDUCE_SIMD_CLONES void accumulate_reversed_loop(T* __restrict dst, const T* __restrict src,
                                                       size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(src[i], dst[i]);
}

// dst[i] = dst[i] op dst[i], for the fully aliased case where restrict would be a lie.
template <typename Op, typename T>
TUTTI_REDUCE_SIMD_CLONES void self_loop(T* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(dst[i], dst[i]);
}

// dst[i] = a[i] op b[i]
template <typename Op, typename T>
TUTTI_REDUCE_SIMD_CLONES void combine_loop(T* __restrict dst, const T* __restrict a,
                                           const T* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(a[i], b[i]);
}

// buf[i] /= divisor. Floats divide (not multiply by a reciprocal) so the mean is correctly rounded;
// integers truncate toward zero, computed in at least int so uint8 is not divided by a wrapped
// divisor.
template <typename T>
TUTTI_REDUCE_SIMD_CLONES void divide_loop(T* __restrict buf, size_t count, int divisor) {
  if constexpr (std::is_floating_point_v<T>) {
    const T d = static_cast<T>(divisor);
    for (size_t i = 0; i < count; ++i) buf[i] = buf[i] / d;
  } else {
    using Wide = std::common_type_t<T, int>;
    const Wide d = static_cast<Wide>(divisor);
    for (size_t i = 0; i < count; ++i) buf[i] = static_cast<T>(static_cast<Wide>(buf[i]) / d);
  }
}

}  // namespace tutti::reduce
