#include "reduce/half.hpp"

#include "reduce/simd_clones.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TUTTI_REDUCE_F16C_PATH 1
#else
#define TUTTI_REDUCE_F16C_PATH 0
#endif

namespace tutti::reduce {
namespace detail {

TUTTI_REDUCE_SIMD_CLONES void widen_f16_portable(const uint16_t* __restrict in,
                                                 float* __restrict out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = f16_to_float(in[i]);
}

TUTTI_REDUCE_SIMD_CLONES void narrow_f16_portable(const float* __restrict in,
                                                  uint16_t* __restrict out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = float_to_f16(in[i]);
}

#if TUTTI_REDUCE_F16C_PATH

// Checked at run time rather than requiring -mf16c, so one binary runs on any x86-64 CPU.
bool cpu_has_f16c() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  }();
  return has;
}

__attribute__((target("avx,f16c"))) static void widen_f16c(const uint16_t* __restrict in,
                                                           float* __restrict out, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  widen_f16_portable(in + i, out + i, count - i);
}

// The immediate selects round-to-nearest-even regardless of MXCSR.
__attribute__((target("avx,f16c"))) static void narrow_f16c(const float* __restrict in,
                                                            uint16_t* __restrict out,
                                                            size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  narrow_f16_portable(in + i, out + i, count - i);
}

bool widen_f16_hardware(const uint16_t* __restrict in, float* __restrict out, size_t count) {
  if (!cpu_has_f16c()) return false;
  widen_f16c(in, out, count);
  return true;
}

bool narrow_f16_hardware(const float* __restrict in, uint16_t* __restrict out, size_t count) {
  if (!cpu_has_f16c()) return false;
  narrow_f16c(in, out, count);
  return true;
}

#else

bool cpu_has_f16c() {
  return false;
}
bool widen_f16_hardware(const uint16_t*, float*, size_t) {
  return false;
}
bool narrow_f16_hardware(const float*, uint16_t*, size_t) {
  return false;
}

#endif

}  // namespace detail

void widen_f16(const uint16_t* __restrict in, float* __restrict out, size_t count) {
  if (!detail::widen_f16_hardware(in, out, count)) detail::widen_f16_portable(in, out, count);
}

void narrow_f16(const float* __restrict in, uint16_t* __restrict out, size_t count) {
  if (!detail::narrow_f16_hardware(in, out, count)) detail::narrow_f16_portable(in, out, count);
}

TUTTI_REDUCE_SIMD_CLONES void widen_bf16(const uint16_t* __restrict in, float* __restrict out,
                                         size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = bf16_to_float(in[i]);
}

TUTTI_REDUCE_SIMD_CLONES void narrow_bf16(const float* __restrict in, uint16_t* __restrict out,
                                          size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = float_to_bf16(in[i]);
}

}  // namespace tutti::reduce
