// tutti's DataType and ReduceOp as NCCL's: what NCCL reduces itself and what it cannot.
#pragma once

#include <nccl.h>

#include <optional>

#include "tutti/types.hpp"

namespace tutti::device::cuda {

// bool travels as uint8; NCCL has no 16-bit integer (nullopt).
std::optional<ncclDataType_t> nccl_type(DataType type);

// sum, prod, min, max and avg; on bool sum/max are max (or) and prod/min are min (and), and avg
// is refused; bitwise ops have no NCCL counterpart (nullopt).
std::optional<ncclRedOp_t> nccl_op(DataType type, ReduceOp op);

}  // namespace tutti::device::cuda
