// Known data in typed buffers, through double: element access for every DataType, float16 and
// bfloat16 converted here, and the steps of a reference reduction. tutti-bench's checked runs and
// the unit tests both fill buffers and work out the results they must get back; this header is
// the one copy of what they share. It depends on tutti/types.hpp alone (no runtime internals), so
// the values a test expects never come from the reduce kernels it checks.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tutti/types.hpp"

namespace tutti::values {

// float16 / bfloat16 <-> float. The public API moves these types as raw 16-bit words, so the
// conversions are done here (round to nearest even; small integers convert exactly).
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

namespace detail {

template <typename T>
T get(const void* buf, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(buf) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void put(void* buf, size_t i, T v) {
  std::memcpy(static_cast<std::byte*>(buf) + i * sizeof(T), &v, sizeof(T));
}

// Integers wrap modulo their width, like the two's complement arithmetic the reduction does.
template <typename T>
T wrap(double v) {
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(v)));
}

}  // namespace detail

// Element i of `buf` (of `type`) as a double.
inline double get_value(DataType type, const void* buf, size_t i) {
  using detail::get;
  switch (type) {
    case DataType::kFloat32:
      return get<float>(buf, i);
    case DataType::kFloat64:
      return get<double>(buf, i);
    case DataType::kFloat16:
      return f16_to_float(get<uint16_t>(buf, i));
    case DataType::kBFloat16:
      return bf16_to_float(get<uint16_t>(buf, i));
    case DataType::kInt32:
      return get<int32_t>(buf, i);
    case DataType::kInt64:
      return static_cast<double>(get<int64_t>(buf, i));
    case DataType::kUInt8:
    case DataType::kBool:
      return get<uint8_t>(buf, i);
    case DataType::kInt8:
      return get<int8_t>(buf, i);
    case DataType::kInt16:
      return get<int16_t>(buf, i);
  }
  return 0;
}

// Sets element i of `buf` (of `type`) to `value`: floating types round to nearest, integers
// truncate toward zero and wrap to their width, bool keeps only whether it is non-zero.
inline void set_value(DataType type, void* buf, size_t i, double value) {
  using detail::put;
  using detail::wrap;
  switch (type) {
    case DataType::kFloat32:
      return put(buf, i, static_cast<float>(value));
    case DataType::kFloat64:
      return put(buf, i, value);
    case DataType::kFloat16:
      return put(buf, i, float_to_f16(static_cast<float>(value)));
    case DataType::kBFloat16:
      return put(buf, i, float_to_bf16(static_cast<float>(value)));
    case DataType::kInt32:
      return put(buf, i, wrap<int32_t>(value));
    case DataType::kInt64:
      return put(buf, i, wrap<int64_t>(value));
    case DataType::kUInt8:
      return put(buf, i, wrap<uint8_t>(value));
    case DataType::kBool:
      return put(buf, i, static_cast<uint8_t>(value != 0));
    case DataType::kInt8:
      return put(buf, i, wrap<int8_t>(value));
    case DataType::kInt16:
      return put(buf, i, wrap<int16_t>(value));
  }
}

// The value `v` becomes when stored in `type`.
inline double as_type(DataType type, double v) {
  std::byte scratch[8];
  set_value(type, scratch, 0, v);
  return get_value(type, scratch, 0);
}

// One step of a reduction, acc `op` v, as the runtime defines it: on bool, sum and max are
// logical or, prod and min logical and, bxor logical xor; integer arithmetic wraps when T is
// unsigned; on double the bitwise ops act on the integers the values hold (callers use them
// only for integer types).
template <typename T>
constexpr T combine(ReduceOp op, T acc, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMax:
      case ReduceOp::kBor:
        return acc || v;
      case ReduceOp::kBxor:
        return acc != v;
      default:  // prod, min, band (avg is not defined on bool)
        return acc && v;
    }
  } else {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        return acc + v;
      case ReduceOp::kProd:
        return acc * v;
      case ReduceOp::kMin:
        return std::min(acc, v);
      case ReduceOp::kMax:
        return std::max(acc, v);
      case ReduceOp::kBand:
      case ReduceOp::kBor:
      case ReduceOp::kBxor:
        break;
    }
    if constexpr (std::is_integral_v<T>) {
      if (op == ReduceOp::kBand) return acc & v;
      if (op == ReduceOp::kBor) return acc | v;
      return acc ^ v;
    } else {
      const auto a = static_cast<int64_t>(acc), b = static_cast<int64_t>(v);
      if (op == ReduceOp::kBand) return static_cast<T>(a & b);
      if (op == ReduceOp::kBor) return static_cast<T>(a | b);
      return static_cast<T>(a ^ b);
    }
  }
}

// input(0) op input(1) op ... op input(nranks - 1), in rank order.
template <typename T, typename Input>
T fold_ranks(ReduceOp op, int nranks, Input input) {
  T acc = input(0);
  for (int r = 1; r < nranks; ++r) acc = combine<T>(op, acc, input(r));
  return acc;
}

// The bool input of `rank` at element i for op: 0 or 1, mostly 1 for the and-like ops and mostly
// 0 for the or-like ones, so that every logical op has both outcomes.
inline double bool_input(ReduceOp op, int rank, size_t i) {
  const bool and_like = op == ReduceOp::kProd || op == ReduceOp::kMin || op == ReduceOp::kBand;
  const bool rare = (static_cast<size_t>(rank) * 5 + i * 3) % 7 == 0;
  return (and_like ? !rare : rare) ? 1.0 : 0.0;
}

// The reduction of bool_input over `nranks` ranks at element i: 0 or 1.
inline double bool_expected(ReduceOp op, int nranks, size_t i) {
  return fold_ranks<bool>(op, nranks, [&](int r) { return bool_input(op, r, i) != 0; }) ? 1 : 0;
}

}  // namespace tutti::values
