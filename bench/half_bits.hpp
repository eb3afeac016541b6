// float16 / bfloat16 <-> float for the benchmark's own data and reference values. The public API
// moves these types as raw 16-bit words, so the benchmark converts by itself (round to nearest
// even; the values it uses are small integers, which convert exactly).
#pragma once

#include <bit>
#include <cstdint>

namespace tutti::bench {

inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal (or zero): mantissa * 2^-24.
    float v = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | (static_cast<uint32_t>(exponent + 112) << 23) |
                              (mantissa << 13));
}

inline uint16_t float_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;         // NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;        // rounds to inf (>= 65520)
  if (x < 0x38800000u) {                              // below the smallest normal half
    float v = std::bit_cast<float>(x) * 16777216.0f;  // in units of 2^-24, exact
    uint32_t q = static_cast<uint32_t>(v);
    float rest = v - static_cast<float>(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t exp_mant = x - (112u << 23);  // rebias 127 -> 15
  exp_mant += 0xfffu + ((exp_mant >> 13) & 1u);
  return sign | static_cast<uint16_t>(exp_mant >> 13);
}

}  // namespace tutti::bench
