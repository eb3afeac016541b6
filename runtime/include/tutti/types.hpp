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
};
inline constexpr int kNumDataTypes = 7;

enum class ReduceOp : int {
  kSum = 0,
  kProd = 1,
  kMin = 2,
  kMax = 3,
  kAvg = 4,
};
inline constexpr int kNumReduceOps = 5;

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
    case DataType::kUInt8:
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
  }
  return "?";
}

constexpr bool valid(DataType t) {
  return static_cast<int>(t) >= 0 && static_cast<int>(t) < kNumDataTypes;
}
constexpr bool valid(ReduceOp op) {
  return static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumReduceOps;
}

}  // namespace tutti
