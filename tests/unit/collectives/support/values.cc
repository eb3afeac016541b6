#include "unit/collectives/support/values.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tutti::testing {
namespace {

template <typename T>
T load(const void* buf, size_t index) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(buf) + index * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void store(void* buf, size_t index, T v) {
  std::memcpy(static_cast<std::byte*>(buf) + index * sizeof(T), &v, sizeof(T));
}

double half_to_double(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Exact for the small integers the tests store; other values round toward zero.
uint16_t double_to_half(double v) {
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  v = std::fabs(v);
  if (v == 0) return sign;
  int exponent;
  const double fraction =
      std::frexp(v, &exponent);  // v = fraction * 2^exponent, fraction in [0.5,1)
  const int biased = exponent + 14;
  if (biased <= 0) return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(v, 24)));
  const auto mantissa = static_cast<uint16_t>(std::ldexp(fraction, 11)) & 0x3ff;
  return static_cast<uint16_t>(sign | (biased << 10) | mantissa);
}

double bfloat16_to_double(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t double_to_bfloat16(double v) {
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16);
}

}  // namespace

double get_value(DataType type, const void* buf, size_t index) {
  switch (type) {
    case DataType::kFloat32:
      return load<float>(buf, index);
    case DataType::kFloat64:
      return load<double>(buf, index);
    case DataType::kFloat16:
      return half_to_double(load<uint16_t>(buf, index));
    case DataType::kBFloat16:
      return bfloat16_to_double(load<uint16_t>(buf, index));
    case DataType::kInt32:
      return load<int32_t>(buf, index);
    case DataType::kInt64:
      return static_cast<double>(load<int64_t>(buf, index));
    case DataType::kUInt8:
    case DataType::kBool:
      return load<uint8_t>(buf, index);
    case DataType::kInt8:
      return load<int8_t>(buf, index);
    case DataType::kInt16:
      return load<int16_t>(buf, index);
  }
  return NAN;
}

void set_value(DataType type, void* buf, size_t index, double value) {
  switch (type) {
    case DataType::kFloat32:
      return store(buf, index, static_cast<float>(value));
    case DataType::kFloat64:
      return store(buf, index, value);
    case DataType::kFloat16:
      return store(buf, index, double_to_half(value));
    case DataType::kBFloat16:
      return store(buf, index, double_to_bfloat16(value));
    case DataType::kInt32:
      return store(buf, index, static_cast<int32_t>(value));
    case DataType::kInt64:
      return store(buf, index, static_cast<int64_t>(value));
    case DataType::kUInt8:
      return store(buf, index, static_cast<uint8_t>(value));
    case DataType::kBool:
      return store(buf, index, static_cast<uint8_t>(value != 0));
    case DataType::kInt8:
      return store(buf, index, static_cast<int8_t>(value));
    case DataType::kInt16:
      return store(buf, index, static_cast<int16_t>(value));
  }
}

double input_value(ReduceOp op, int rank, size_t index) {
  if (op == ReduceOp::kProd) return (static_cast<size_t>(rank) + index) % 3 == 0 ? 2 : 1;
  return static_cast<double>((static_cast<size_t>(rank) * 7 + index) % 5 + 1);
}

double input_value(DataType type, ReduceOp op, int rank, size_t index) {
  if (type != DataType::kBool) return input_value(op, rank, index);
  // Mostly true for the and-like ops, mostly false for the or-like ones, so both outcomes occur.
  const size_t mix = (static_cast<size_t>(rank) * 5 + index * 3) % 7;
  const bool and_like = op == ReduceOp::kProd || op == ReduceOp::kMin || op == ReduceOp::kBand;
  return and_like ? (mix != 0) : (mix == 0);
}

namespace {

double bool_reduction(ReduceOp op, int size, size_t index) {
  bool acc = input_value(DataType::kBool, op, 0, index) != 0;
  for (int r = 1; r < size; ++r) {
    const bool v = input_value(DataType::kBool, op, r, index) != 0;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMax:
      case ReduceOp::kBor:
        acc = acc || v;
        break;
      case ReduceOp::kBxor:
        acc = acc != v;
        break;
      default:  // prod, min, band
        acc = acc && v;
        break;
    }
  }
  return acc ? 1 : 0;
}

}  // namespace

double expected_value(DataType type, ReduceOp op, int size, size_t index) {
  if (type == DataType::kBool) return bool_reduction(op, size, index);
  double acc = input_value(op, 0, index);
  for (int r = 1; r < size; ++r) {
    const double v = input_value(op, r, index);
    const auto a = static_cast<int64_t>(acc), b = static_cast<int64_t>(v);
    switch (op) {
      case ReduceOp::kBand:
        acc = static_cast<double>(a & b);
        break;
      case ReduceOp::kBor:
        acc = static_cast<double>(a | b);
        break;
      case ReduceOp::kBxor:
        acc = static_cast<double>(a ^ b);
        break;
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
    }
  }
  if (op == ReduceOp::kAvg) {
    acc /= size;
    if (!is_floating(type)) acc = std::trunc(acc);
  }
  return acc;
}

bool close_enough(DataType type, ReduceOp op, double got, double expected) {
  if (op != ReduceOp::kAvg || !is_floating(type)) return got == expected;
  double relative = 1e-12;
  if (type == DataType::kFloat32) relative = 1e-6;
  if (type == DataType::kFloat16) relative = 2e-3;
  if (type == DataType::kBFloat16) relative = 1e-2;
  return std::fabs(got - expected) <= relative * std::fabs(expected);
}

std::string mismatch(const std::string& label, size_t index, double got, double expected) {
  return fmt::format("{}: element {} is {} but should be {}", label, index, got, expected);
}

}  // namespace tutti::testing
