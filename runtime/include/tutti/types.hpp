// Element types and reduction operations shared by every layer and by the public C++ API.
// Kept free of other includes so that the lowest layer (core) can use it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tutti {

// Values match tutti_dtype_t / tutti_op_t in tutti.h so the C API converts with a cast.
enum class DataType : int {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kUInt8 = 6,
  kInt8 = 7,
  kInt16 = 8,
  kBool = 9,  // one byte, 0 or 1 (as torch.bool); reduced as logic, see ReduceOp
};
inline constexpr int kNumDataTypes = 10;

enum class ReduceOp : int {
  kSum = 0,
  kProd = 1,
  kMin = 2,
  kMax = 3,
  kAvg = 4,
  // Bitwise, on integer types and bool only (Error(kInvalidArgument) on floating types).
  kBand = 5,
  kBor = 6,
  kBxor = 7,
};
inline constexpr int kNumReduceOps = 8;
// On bool, sum and max are logical or, prod and min logical and, bxor logical xor; avg is refused.

constexpr std::size_t element_size(DataType t) {
  switch (t) {
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt16:
      return 2;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool:
      return 1;
  }
  return 0;
}

constexpr bool is_floating(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 ||
         t == DataType::kBFloat16;
}

constexpr std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kInt16:
      return "int16";
    case DataType::kBool:
      return "bool";
  }
  return "?";
}

constexpr std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kBand:
      return "band";
    case ReduceOp::kBor:
      return "bor";
    case ReduceOp::kBxor:
      return "bxor";
  }
  return "?";
}

constexpr bool valid(DataType t) {
  return static_cast<int>(t) >= 0 && static_cast<int>(t) < kNumDataTypes;
}
constexpr bool valid(ReduceOp op) {
  return static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumReduceOps;
}

constexpr bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
}

// Whether `op` is defined on `type`: bitwise ops not on floating types, avg not on bool.
constexpr bool supports(DataType type, ReduceOp op) {
  if (is_bitwise(op)) return !is_floating(type);
  if (op == ReduceOp::kAvg) return type != DataType::kBool;
  return true;
}

}  // namespace tutti
