#include "collectives/checks.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace tutti::collectives {

size_t check_buffers(const Context& ctx, std::string_view what, const void* send, const void* recv,
                     size_t count, DataType type, size_t blocks) {
  if (!valid(type)) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: unknown data type {}; pass one of the tutti DataType values",
                     what, ctx.rank, static_cast<int>(type));
  }
  if (count > 0 && (send == nullptr || recv == nullptr)) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: null buffer with count {}; pass valid send and recv buffers",
                     what, ctx.rank, count);
  }
  const size_t element_bytes = element_size(type);
  constexpr size_t kMaxBytes = static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max());
  if (blocks == 0 || count > kMaxBytes / element_bytes / blocks) {
    throw make_error(
        ErrorCode::kInvalidArgument,
        "{} on rank {}: count {} of {} ({} block{}) is more bytes than any buffer can hold; "
        "pass the number of elements, not bytes, and check it for overflow",
        what, ctx.rank, count, to_string(type), blocks, blocks == 1 ? "" : "s");
  }
  return count * element_bytes * blocks;
}

size_t check_counts(const Context& ctx, std::string_view what, std::string_view name,
                    std::span<const size_t> counts, DataType type) {
  if (counts.size() != static_cast<size_t>(ctx.size)) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: {} has {} entries but the communicator has {} ranks; pass one "
                     "count per rank",
                     what, ctx.rank, name, counts.size(), ctx.size);
  }
  if (!valid(type)) check_buffers(ctx, what, nullptr, nullptr, 0, type);  // throws
  constexpr size_t kMaxBytes = static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max());
  const size_t limit = kMaxBytes / element_size(type);
  size_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > limit - total) {
      throw make_error(ErrorCode::kInvalidArgument,
                       "{} on rank {}: {}[{}] = {} brings the total past what any buffer of {} can "
                       "hold; pass element counts, not bytes",
                       what, ctx.rank, name, i, counts[i], to_string(type));
    }
    total += counts[i];
  }
  return total;
}

void check_root(const Context& ctx, std::string_view what, int root) {
  if (root < 0 || root >= ctx.size) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: root {} is outside the communicator of {} ranks; pass a root "
                     "in 0..{}",
                     what, ctx.rank, root, ctx.size, ctx.size - 1);
  }
}

void check_pointer(const Context& ctx, std::string_view what, std::string_view name, const void* p,
                   size_t count) {
  if (p == nullptr && count > 0) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: {} is null but holds {} elements here; pass a valid buffer",
                     what, ctx.rank, name, count);
  }
}

void bound_segment(Context& ctx, size_t message_bytes) {
  constexpr size_t kMinSegment = 64;
  ctx.segment_bytes = std::min(ctx.segment_bytes, std::max(message_bytes, kMinSegment));
}

void check_op(const Context& ctx, std::string_view what, ReduceOp op, DataType type) {
  if (!valid(op)) {
    throw make_error(
        ErrorCode::kInvalidArgument,
        "{} on rank {}: unknown reduce op {}; pass sum, prod, min, max, avg, band, bor "
        "or bxor",
        what, ctx.rank, static_cast<int>(op));
  }
  if (!supports(type, op)) {
    throw make_error(ErrorCode::kInvalidArgument, "{} on rank {}: op {} is not defined on {}; {}",
                     what, ctx.rank, to_string(op), to_string(type),
                     is_bitwise(op) ? "bitwise ops take integer types and bool"
                                    : "bool has no average: reduce as int and divide");
  }
}

void copy_unless_same(const void* from, void* to, size_t bytes) {
  if (from != to && bytes > 0) std::memcpy(to, from, bytes);
}

}  // namespace tutti::collectives
