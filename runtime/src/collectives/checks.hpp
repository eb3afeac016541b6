// Argument checks and small buffer helpers shared by the collective entry points.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "collectives/context.hpp"
#include "tutti/types.hpp"

namespace tutti::collectives {

// Throws Error(kInvalidArgument) naming the collective and the rank when the data type is unknown,
// a buffer is null while count > 0, or the largest buffer (`blocks` blocks of `count` elements)
// has more bytes than an address space can hold. Returns that buffer's size in bytes.
size_t check_buffers(const Context& ctx, std::string_view what, const void* send, const void* recv,
                     size_t count, DataType type, size_t blocks = 1);

// The per-rank counts of a v-collective: Error(kInvalidArgument) naming `what` unless there is one
// per rank and their sum is a possible buffer. Returns the sum.
size_t check_counts(const Context& ctx, std::string_view what, std::string_view name,
                    std::span<const size_t> counts, DataType type);
// Error(kInvalidArgument) when `root` is not a rank of the context.
void check_root(const Context& ctx, std::string_view what, int root);
// Error(kInvalidArgument) when `p` is null but `count` elements are to be read or written there.
void check_pointer(const Context& ctx, std::string_view what, std::string_view name, const void* p,
                   size_t count);

// Caps ctx.segment_bytes at the message: a segment beyond it changes nothing but the scratch
// memory the pipelines set aside (16 segments), which would otherwise grow with the setting.
void bound_segment(Context& ctx, size_t message_bytes);
// Error(kInvalidArgument) for an unknown op or one `type` does not support (tutti::supports).
void check_op(const Context& ctx, std::string_view what, ReduceOp op, DataType type);

// Copies count elements unless the buffers are the same (in place).
void copy_unless_same(const void* from, void* to, size_t bytes);

inline const std::byte* bytes_of(const void* p) {
  return static_cast<const std::byte*>(p);
}
inline std::byte* bytes_of(void* p) {
  return static_cast<std::byte*>(p);
}

}  // namespace tutti::collectives
