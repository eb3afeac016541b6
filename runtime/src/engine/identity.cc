#include "engine/identity.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tutti::engine {
namespace {

template <typename T>
void fill(void* buf, size_t count, T value) {
  std::fill_n(static_cast<T*>(buf), count, value);
}

template <typename T>
void fill_numeric(void* buf, size_t count, ReduceOp op) {
  using L = std::numeric_limits<T>;
  switch (op) {
    case ReduceOp::kProd:
      return fill<T>(buf, count, T(1));
    case ReduceOp::kMin:
      return fill<T>(buf, count, L::has_infinity ? L::infinity() : L::max());
    case ReduceOp::kMax:
      return fill<T>(buf, count, L::has_infinity ? -L::infinity() : L::lowest());
    case ReduceOp::kBand:
      if constexpr (std::is_integral_v<T>) return fill<T>(buf, count, static_cast<T>(~T(0)));
      break;
    default:
      break;
  }
  fill<T>(buf, count, T(0));
}

// float16 and bfloat16 as bit patterns.
void fill_half(void* buf, size_t count, ReduceOp op, bool bf16) {
  uint16_t v = 0;
  if (op == ReduceOp::kProd) v = bf16 ? 0x3F80 : 0x3C00;
  if (op == ReduceOp::kMin) v = bf16 ? 0x7F80 : 0x7C00;
  if (op == ReduceOp::kMax) v = bf16 ? 0xFF80 : 0xFC00;
  fill<uint16_t>(buf, count, v);
}

}  // namespace

void fill_identity(void* buf, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return;
  switch (type) {
    case DataType::kFloat32:
      return fill_numeric<float>(buf, count, op);
    case DataType::kFloat64:
      return fill_numeric<double>(buf, count, op);
    case DataType::kFloat16:
      return fill_half(buf, count, op, false);
    case DataType::kBFloat16:
      return fill_half(buf, count, op, true);
    case DataType::kInt32:
      return fill_numeric<int32_t>(buf, count, op);
    case DataType::kInt64:
      return fill_numeric<int64_t>(buf, count, op);
    case DataType::kUInt8:
      return fill_numeric<uint8_t>(buf, count, op);
    case DataType::kInt8:
      return fill_numeric<int8_t>(buf, count, op);
    case DataType::kInt16:
      return fill_numeric<int16_t>(buf, count, op);
    case DataType::kBool: {
      // and-like ops (prod, min, band) have identity 1; or-like ones 0.
      const bool one = op == ReduceOp::kProd || op == ReduceOp::kMin || op == ReduceOp::kBand;
      return fill<uint8_t>(buf, count, one ? 1 : 0);
    }
  }
}

}  // namespace tutti::engine
