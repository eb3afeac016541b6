// Elementwise reduction kernels: every DataType x ReduceOp, vectorizable inner loops on the CPU.
// float16/bfloat16 are widened to float in blocks, reduced, and narrowed with
// round-to-nearest-even. kAvg reduces like kSum; the collective divides once at the end (divide()).
#pragma once

#include <cstddef>

#include "tutti/types.hpp"

namespace tutti::reduce {

// dst[i] = dst[i] op src[i]
void accumulate(DataType type, ReduceOp op, void* dst, const void* src, size_t count);

// dst[i] = a[i] op b[i]; dst may alias a or b.
void combine(DataType type, ReduceOp op, void* dst, const void* a, const void* b, size_t count);

// buf[i] /= divisor (integers: truncating division), for kAvg.
void divide(DataType type, void* buf, size_t count, int divisor);

}  // namespace tutti::reduce
