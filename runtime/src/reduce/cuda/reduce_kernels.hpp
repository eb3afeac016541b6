// The device's elementwise reduction: out[i] = op(a[i] * scale_a, b[i] * scale_b) * post, for
// every DataType and every ReduceOp but kAvg, as a CUDA kernel on a stream. The same meaning as
// the CPU's reduce::combine / combine_scaled (reduce/reduce.hpp, reduce/ops.hpp): integers wrap,
// min/max propagate NaN, float16/bfloat16 compute in float and round to nearest even, bool is
// logic (sum and max or, prod and min and, bxor xor).
//
// This header names no CUDA type (the stream is a void*, the result a cudaError_t as int), so the
// layers above include it without the CUDA headers; the kernels live in reduce_kernels.cu.
#pragma once

#include <cstddef>

#include "reduce/device_reduce.hpp"
#include "tutti/types.hpp"

namespace tutti::reduce::cuda {

using tutti::reduce::DeviceReduce;

// Enqueues the kernel on `stream` (a cudaStream_t; null is the legacy default stream) and returns
// cudaGetLastError()'s value (0 is cudaSuccess). Call reduce::validate() first: an unsupported
// combination reaching here returns cudaErrorInvalidValue. count 0 launches nothing.
int launch_reduce(const DeviceReduce& r, void* stream);

}  // namespace tutti::reduce::cuda
