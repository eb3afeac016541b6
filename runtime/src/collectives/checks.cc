#include "collectives/checks.hpp"

#include <cstring>

#include "core/error.hpp"

namespace tutti::collectives {

void check_buffers(const Context& ctx, std::string_view what, const void* send, const void* recv,
                   size_t count, DataType type) {
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
}

void check_op(const Context& ctx, std::string_view what, ReduceOp op) {
  if (!valid(op)) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: unknown reduce op {}; pass sum, prod, min, max or avg", what,
                     ctx.rank, static_cast<int>(op));
  }
}

void copy_unless_same(const void* from, void* to, size_t bytes) {
  if (from != to && bytes > 0) std::memcpy(to, from, bytes);
}

}  // namespace tutti::collectives
