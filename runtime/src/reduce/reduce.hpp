// Elementwise reduction kernels: every DataType x ReduceOp, vectorizable inner loops on the CPU.
// float16/bfloat16 are widened to float in blocks, reduced, and narrowed with
// round-to-nearest-even. kAvg reduces like kSum; the collective divides once at the end (divide()).
#pragma once

#include <cstddef>
#include <span>

#include "tutti/types.hpp"

namespace tutti::reduce {

// dst[i] = dst[i] op src[i]
void accumulate(DataType type, ReduceOp op, void* dst, const void* src, size_t count);

// dst[i] = a[i] op b[i]; dst may alias a or b.
void combine(DataType type, ReduceOp op, void* dst, const void* a, const void* b, size_t count);

// How reduce_many writes its result (out) and its second copy.
enum class CopyStores {
  kCached,     // ordinary stores: the lines stay in this core's cache
  kStreaming,  // non-temporal stores: straight to memory, no read-for-ownership, cache untouched
};

// out[i] = srcs[0][i] op srcs[1][i] op ... op srcs[n-1][i], left to right, each step rounded like
// combine(), and the same values to `copy` unless it is null. One pass over the sources: the
// partial result of each block stays in L1 between steps and is stored once. `out` may alias any
// source exactly; `copy` must not overlap `out` or a source. `stores` is how `copy` is written,
// `out_stores` how `out` is: streaming suits an out that nobody reads soon and that is not in
// cache (an out-of-place output larger than the cache), whose lines would otherwise be read from
// memory before being overwritten. Streaming stores are fenced before the call returns, so a
// release store after it publishes them.
void reduce_many(DataType type, ReduceOp op, void* out, void* copy,
                 std::span<const void* const> srcs, size_t count,
                 CopyStores stores = CopyStores::kCached,
                 CopyStores out_stores = CopyStores::kCached);

// memcpy with non-temporal stores (fenced before returning) for buffers another core reads next:
// no read-for-ownership of the destination and no eviction of this core's working set.
void stream_copy(void* dst, const void* src, size_t bytes);

// ---- Scaled sums (allreduce's prescale/postscale; floating types only, else
// Error(kInvalidArgument)). Computed in float (double for float64), rounded once when stored; dst
// may alias a or b exactly. ----

// dst[i] = (a[i] * a_scale + b[i] * b_scale) * out_scale
void combine_scaled(DataType type, void* dst, const void* a, double a_scale, const void* b,
                    double b_scale, double out_scale, size_t count);
// dst[i] = src[i] * factor (dst may equal src)
void scale(DataType type, void* dst, const void* src, double factor, size_t count);
// out[i] = (sum over k of srcs[k][i] * pre) * post, and the same to `copy` unless it is null; the
// aliasing and store rules of reduce_many.
void reduce_many_scaled(DataType type, void* out, void* copy, std::span<const void* const> srcs,
                        size_t count, double pre, double post,
                        CopyStores stores = CopyStores::kCached,
                        CopyStores out_stores = CopyStores::kCached);

// buf[i] /= divisor (integers: truncating division), for kAvg.
void divide(DataType type, void* buf, size_t count, int divisor);

}  // namespace tutti::reduce
