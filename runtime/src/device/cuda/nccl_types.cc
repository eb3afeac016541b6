#include "device/cuda/nccl_types.hpp"

namespace tutti::device::cuda {

std::optional<ncclDataType_t> nccl_type(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kUInt8:
    case DataType::kBool:
      return ncclUint8;
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kInt16:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ncclRedOp_t> nccl_op(DataType type, ReduceOp op) {
  if (!nccl_type(type)) return std::nullopt;
  if (type == DataType::kBool) {
    // Bytes 0 and 1: max is or, min is and.
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMax:
        return ncclMax;
      case ReduceOp::kProd:
      case ReduceOp::kMin:
        return ncclMin;
      default:
        return std::nullopt;
    }
  }
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kProd:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kAvg:
      return ncclAvg;
    default:
      return std::nullopt;
  }
}

}  // namespace tutti::device::cuda
