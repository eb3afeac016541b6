// IEEE float16 and bfloat16 <-> float conversions. Widening is exact; narrowing rounds to nearest,
// ties to even. Inf stays inf; NaN stays NaN (quieted, with as much payload as the narrower type
// holds), which is also what the x86 F16C instructions do, so both block paths give the same bits.
// The scalar functions are the portable reference; the block functions are what kernels call.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace tutti::reduce {

// Both directions use integer arithmetic only: with the default -ftrapping-math, g++ will not
// if-convert float operations, and a loop over these functions would stay scalar.
inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  // Rebias the exponent from 15 to 127; the top exponent (inf/NaN) maps to 255 and NaNs get the
  // quiet bit, as F16C's vcvtph2ps does.
  const uint32_t normal_bits = ((exponent + 112u) << 23) | (mantissa << 13);
  const uint32_t special_bits = 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u);
  // A subnormal half is mantissa * 2^-24: normalize it by shifting its leading 1 up to bit 9 (a
  // branch-free binary search), which is a float with exponent 2^(-15 - shift).
  uint32_t m = mantissa;
  uint32_t shift = 0;
  shift += m < 0x4u ? 8u : 0u;
  m = m < 0x4u ? m << 8 : m;
  shift += m < 0x40u ? 4u : 0u;
  m = m < 0x40u ? m << 4 : m;
  shift += m < 0x100u ? 2u : 0u;
  m = m < 0x100u ? m << 2 : m;
  shift += m < 0x200u ? 1u : 0u;
  m = m < 0x200u ? m << 1 : m;
  const uint32_t subnormal_bits =
      mantissa == 0 ? 0u : ((112u - shift) << 23) | ((m & 0x1ffu) << 14);
  uint32_t bits = exponent == 0 ? subnormal_bits : normal_bits;
  bits = exponent == 31 ? special_bits : bits;
  return std::bit_cast<float>(sign | bits);
}

namespace detail {
// Mask arithmetic instead of ?: chains, which g++ turns back into a multi-way branch that the
// vectorizer refuses.
inline uint32_t mask_if(bool condition) {
  return 0u - static_cast<uint32_t>(condition);
}
inline uint32_t select_bits(bool condition, uint32_t if_true, uint32_t if_false) {
  return (if_true & mask_if(condition)) | (if_false & ~mask_if(condition));
}
}  // namespace detail

inline uint16_t float_to_f16(float f) {
  using detail::mask_if;
  using detail::select_bits;
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (w >> 16) & 0x8000u;
  const uint32_t magnitude = w & 0x7fffffffu;
  // Normal range: drop the exponent bias difference (112 << 23) and round the 13 dropped mantissa
  // bits to nearest even; a carry correctly bumps the exponent.
  const uint32_t normal = (magnitude - 0x38000000u + 0xfffu + ((magnitude >> 13) & 1u)) >> 13;
  // Below 2^-14 the result is a half subnormal counting steps of 2^-24: the float's significand
  // (with its implicit 1) shifted right by 126 - exponent, rounded to nearest even. Anything below
  // 2^-25 (exponent < 102) rounds to zero. The shift is clamped to [14, 25] so that lanes which
  // end up unused never shift by 32 or more.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - std::clamp(exponent, 101u, 112u);
  const uint32_t kept = significand >> shift;
  const uint32_t remainder = significand - (kept << shift);
  const uint32_t halfway = 1u << (shift - 1u);
  const uint32_t round_up = static_cast<uint32_t>(remainder > halfway) |
                            (static_cast<uint32_t>(remainder == halfway) & kept);
  const uint32_t subnormal = (kept + (round_up & 1u)) & mask_if(exponent >= 102u);
  const uint32_t nan = 0x7e00u | ((magnitude >> 13) & 0x3ffu);
  uint32_t bits = select_bits(magnitude >= 0x38800000u, normal, subnormal);  // 2^-14: min normal
  bits = select_bits(magnitude >= 0x477ff000u, 0x7c00u, bits);  // >= 65520 rounds past 65504 to inf
  bits = select_bits(magnitude > 0x7f800000u, nan, bits);
  return static_cast<uint16_t>(sign | bits);
}

inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bf16(float f) {
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (w + 0x7fffu + ((w >> 16) & 1u)) >> 16;
  // A NaN must not round into infinity (or wrap the sign), so it keeps its top bits, quieted.
  const uint32_t nan = (w >> 16) | 0x40u;
  const bool is_nan = (w & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(is_nan ? nan : rounded);
}

// Block conversions used by the kernels; float16 uses F16C when the CPU has it.
void widen_f16(const uint16_t* __restrict in, float* __restrict out, size_t count);
void narrow_f16(const float* __restrict in, uint16_t* __restrict out, size_t count);
void widen_bf16(const uint16_t* __restrict in, float* __restrict out, size_t count);
void narrow_bf16(const float* __restrict in, uint16_t* __restrict out, size_t count);

namespace detail {
// Exposed so tests can check the portable and the F16C paths against each other.
bool cpu_has_f16c();
void widen_f16_portable(const uint16_t* __restrict in, float* __restrict out, size_t count);
void narrow_f16_portable(const float* __restrict in, uint16_t* __restrict out, size_t count);
// Return false (and do nothing) when the F16C path is not compiled in or the CPU lacks it.
bool widen_f16_hardware(const uint16_t* __restrict in, float* __restrict out, size_t count);
bool narrow_f16_hardware(const float* __restrict in, uint16_t* __restrict out, size_t count);
}  // namespace detail

}  // namespace tutti::reduce
