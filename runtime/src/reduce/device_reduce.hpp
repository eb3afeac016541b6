// One elementwise reduction on a device: out[i] = op(a[i] * scale_a, b[i] * scale_b) * post, for
// `count` elements of `type`. op is never kAvg: the caller turns a floating avg into sum with
// post = 1/size, and an integer avg into sum with divisor = size (out[i] = (a[i] + b[i]) / size,
// the wrapped sum divided and truncated toward zero, as the host path's reduce::divide). The
// scales are 1 except for sum on floating types. out may equal a or b. The CUDA kernels
// (reduce/cuda/) compute it; the device layer hands it on as device::ReduceArgs.
#pragma once

#include <cstddef>

#include "tutti/types.hpp"

namespace tutti::reduce {

struct DeviceReduce {
  void* out = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  double scale_a = 1.0;
  double scale_b = 1.0;
  double post = 1.0;
  int divisor = 1;  // integer sum only
};

// Throws Error(kInvalidArgument) unless the device kernels compute `r`: op is not kAvg, bitwise
// ops only on integers and bool, scales other than 1 only for sum on floating types, a divisor
// only for an unscaled integer sum.
void validate(const DeviceReduce& r);

}  // namespace tutti::reduce
