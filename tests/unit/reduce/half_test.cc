#include "reduce/half.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tutti::reduce {
namespace {

bool is_f16_nan(uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}
bool is_bf16_nan(uint16_t b) {
  return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
}
uint32_t bits_of(float f) {
  return std::bit_cast<uint32_t>(f);
}

std::vector<uint16_t> all_16bit_patterns() {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  return all;
}

// The value a finite half encodes, computed independently of the code under test.
double f16_value(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000u) ? -magnitude : magnitude;
}

TEST(HalfTest, Float16WidensEveryFinitePatternExactly) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    if ((h & 0x7c00u) == 0x7c00u) continue;
    const float f = f16_to_float(h);
    ASSERT_EQ(static_cast<double>(f), f16_value(h)) << "half 0x" << std::hex << i;
    ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << "half 0x" << std::hex << i;
  }
}

TEST(HalfTest, Float16InfinityAndNaNWiden) {
  EXPECT_EQ(f16_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_float(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_float(0x7c01)));  // signalling NaN with the smallest payload
  EXPECT_TRUE(std::signbit(f16_to_float(0xfe00)));
}

TEST(HalfTest, Float16RoundTripsAllPatterns) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const uint16_t back = float_to_f16(f16_to_float(h));
    if (is_f16_nan(h)) {
      ASSERT_TRUE(is_f16_nan(back)) << "half 0x" << std::hex << i << " -> 0x" << back;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << "NaN sign, half 0x" << std::hex << i;
    } else {
      ASSERT_EQ(back, h) << "half 0x" << std::hex << i;
    }
  }
}

TEST(HalfTest, BFloat16RoundTripsAllPatterns) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<uint16_t>(i);
    const float f = bf16_to_float(b);
    ASSERT_EQ(bits_of(f), i << 16);
    const uint16_t back = float_to_bf16(f);
    if (is_bf16_nan(b)) {
      ASSERT_TRUE(is_bf16_nan(back)) << "bf16 0x" << std::hex << i << " -> 0x" << back;
      ASSERT_EQ(back & 0x8000u, b & 0x8000u);
    } else {
      ASSERT_EQ(back, b) << "bf16 0x" << std::hex << i;
    }
  }
}

TEST(HalfTest, BlockConversionsMatchScalarOnAllPatterns) {
  const std::vector<uint16_t> all = all_16bit_patterns();
  std::vector<float> wide(all.size());
  std::vector<uint16_t> narrow(all.size());

  widen_f16(all.data(), wide.data(), all.size());
  narrow_f16(wide.data(), narrow.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(bits_of(wide[i]), bits_of(f16_to_float(all[i]))) << "f16 widen 0x" << std::hex << i;
    ASSERT_EQ(narrow[i], float_to_f16(wide[i])) << "f16 narrow 0x" << std::hex << i;
  }

  widen_bf16(all.data(), wide.data(), all.size());
  narrow_bf16(wide.data(), narrow.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(bits_of(wide[i]), bits_of(bf16_to_float(all[i]))) << "bf16 widen 0x" << std::hex << i;
    ASSERT_EQ(narrow[i], float_to_bf16(wide[i])) << "bf16 narrow 0x" << std::hex << i;
  }
}

// Float patterns spread over the whole 32-bit space (every exponent, both signs, NaNs), plus
// every odd count so block tails are exercised.
std::vector<float> sampled_floats() {
  std::vector<float> out;
  for (uint64_t w = 0; w <= 0xffffffffu; w += 4099)
    out.push_back(std::bit_cast<float>(uint32_t(w)));
  return out;
}

TEST(HalfTest, PortableAndHardwareFloat16PathsAgree) {
  if (!detail::cpu_has_f16c()) GTEST_SKIP() << "CPU has no F16C; only the portable path exists";
  const std::vector<uint16_t> all = all_16bit_patterns();
  std::vector<float> portable(all.size());
  std::vector<float> hardware(all.size());
  detail::widen_f16_portable(all.data(), portable.data(), all.size());
  ASSERT_TRUE(detail::widen_f16_hardware(all.data(), hardware.data(), all.size()));
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(bits_of(portable[i]), bits_of(hardware[i])) << "half 0x" << std::hex << i;
  }

  const std::vector<float> floats = sampled_floats();
  std::vector<uint16_t> narrow_portable(floats.size());
  std::vector<uint16_t> narrow_hardware(floats.size());
  detail::narrow_f16_portable(floats.data(), narrow_portable.data(), floats.size());
  ASSERT_TRUE(detail::narrow_f16_hardware(floats.data(), narrow_hardware.data(), floats.size()));
  for (size_t i = 0; i < floats.size(); ++i) {
    ASSERT_EQ(narrow_portable[i], narrow_hardware[i])
        << "float bits 0x" << std::hex << bits_of(floats[i]);
  }
}

// Between two neighbouring halves, the exact midpoint goes to the one with an even mantissa and
// anything off the midpoint goes to the nearer one. This covers subnormals, the normal range,
// the step from 0 to the smallest subnormal and from 65504 to infinity.
TEST(HalfTest, Float16NarrowingRoundsToNearestEven) {
  for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
    for (uint32_t low = 0; low < 0x7c00u; ++low) {
      const auto lo = static_cast<uint16_t>(sign | low);
      const auto hi = static_cast<uint16_t>(sign | (low + 1));
      // Past 65504 the next step is infinity, which rounding treats as 65536.
      const double lo_value = f16_value(lo);
      const double hi_value = low + 1 < 0x7c00u ? f16_value(hi) : (sign ? -65536.0 : 65536.0);
      const auto mid = static_cast<float>((lo_value + hi_value) / 2);  // exact: 12 bits needed
      ASSERT_EQ(static_cast<double>(mid), (lo_value + hi_value) / 2);
      const uint16_t even = (low & 1u) ? hi : lo;
      ASSERT_EQ(float_to_f16(mid), even) << "midpoint after half 0x" << std::hex << lo;
      const float toward_hi = std::nextafter(mid, sign ? -INFINITY : INFINITY);
      const float toward_lo = std::nextafter(mid, sign ? INFINITY : -INFINITY);
      ASSERT_EQ(float_to_f16(toward_hi), hi) << "just past midpoint after 0x" << std::hex << lo;
      ASSERT_EQ(float_to_f16(toward_lo), lo) << "just before midpoint after 0x" << std::hex << lo;
    }
  }
}

TEST(HalfTest, Float16NarrowingSpecialValues) {
  EXPECT_EQ(float_to_f16(0.0f), 0x0000);
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(float_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(float_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_f16(-1e-10f), 0x8000);
  EXPECT_TRUE(is_f16_nan(float_to_f16(NAN)));
  EXPECT_TRUE(is_f16_nan(float_to_f16(std::bit_cast<float>(0x7f800001u))));  // payload below f16
  EXPECT_TRUE(is_f16_nan(float_to_f16(std::bit_cast<float>(0xffc00000u))));
  EXPECT_EQ(float_to_f16(std::bit_cast<float>(0xffc00000u)) & 0x8000, 0x8000);
}

// Sampled floats narrow to a half no farther from them than either neighbour.
TEST(HalfTest, Float16NarrowingPicksNearestForSampledFloats) {
  for (float f : sampled_floats()) {
    if (!std::isfinite(f) || std::fabs(f) >= 65504.0f) continue;
    const uint16_t h = float_to_f16(f);
    const double error = std::fabs(f16_value(h) - f);
    const uint16_t magnitude = h & 0x7fffu;
    if (magnitude < 0x7bffu) {
      ASSERT_LE(error, std::fabs(f16_value(static_cast<uint16_t>(h + 1)) - f)) << f;
    }
    if (magnitude > 0) {
      ASSERT_LE(error, std::fabs(f16_value(static_cast<uint16_t>(h - 1)) - f)) << f;
    }
  }
}

TEST(HalfTest, BFloat16NarrowingRoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to inf
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  // NaNs whose low bits would carry into the exponent must not become infinity or zero.
  EXPECT_TRUE(is_bf16_nan(float_to_bf16(std::bit_cast<float>(0x7fffffffu))));
  EXPECT_TRUE(is_bf16_nan(float_to_bf16(std::bit_cast<float>(0x7f800001u))));
  EXPECT_TRUE(is_bf16_nan(float_to_bf16(std::bit_cast<float>(0xffffffffu))));
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0xffffffffu)) & 0x8000, 0x8000);
}

}  // namespace
}  // namespace tutti::reduce
