// The host-side check of what the device kernels compute (reduce/cuda/reduce_kernels.cu), so that
// a caller hears kInvalidArgument from the host instead of cudaErrorInvalidValue from a launch.
// Built without CUDA too: the tests' device stand-in refuses exactly what the kernels refuse.
#include "reduce/device_reduce.hpp"

#include "core/error.hpp"

namespace tutti::reduce {

void validate(const DeviceReduce& r) {
  if (static_cast<int>(r.type) < 0 || static_cast<int>(r.type) >= kNumDataTypes)
    throw make_error(ErrorCode::kInvalidArgument, "device reduce: unknown data type {}",
                     static_cast<int>(r.type));
  switch (r.op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd:
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      break;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if (is_floating(r.type))
        throw make_error(ErrorCode::kInvalidArgument,
                         "device reduce: bitwise op {} on {}; bitwise ops take integer and bool "
                         "buffers",
                         to_string(r.op), to_string(r.type));
      break;
    default:
      // kAvg is the caller's: sum, then post = 1/size (see device::ReduceArgs).
      throw make_error(ErrorCode::kInvalidArgument,
                       "device reduce: op {} is not an elementwise kernel op (avg is sum with "
                       "post = 1/size)",
                       to_string(r.op));
  }
  const bool scaled = r.scale_a != 1.0 || r.scale_b != 1.0 || r.post != 1.0;
  if (scaled && !(r.op == ReduceOp::kSum && is_floating(r.type)))
    throw make_error(ErrorCode::kInvalidArgument,
                     "device reduce: scales (a {}, b {}, post {}) apply to sum on floating types "
                     "only",
                     r.scale_a, r.scale_b, r.post);
  if (r.divisor != 1) {
    if (r.divisor < 1)
      throw make_error(ErrorCode::kInvalidArgument, "device reduce: divisor {} (must be >= 1)",
                       r.divisor);
    if (r.op != ReduceOp::kSum || is_floating(r.type) || r.type == DataType::kBool || scaled)
      throw make_error(ErrorCode::kInvalidArgument,
                       "device reduce: a divisor ({}) applies to an unscaled sum of integers only "
                       "(floating avg scales by post = 1/size), not {} {}",
                       r.divisor, to_string(r.type), to_string(r.op));
  }
  if (r.count > 0 && (r.out == nullptr || r.a == nullptr || r.b == nullptr))
    throw make_error(ErrorCode::kInvalidArgument, "device reduce: null buffer for {} elements",
                     r.count);
}

}  // namespace tutti::reduce
