// The allreduce entry point: argument checks, trivial cases, algorithm choice, and kAvg (reduced
// as a sum, divided once at the end so every rank divides the same exact sum).
#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "core/error.hpp"
#include "reduce/reduce.hpp"

namespace tutti::collectives {

void allreduce(Context& ctx, Algorithm algorithm, const void* send, void* recv, size_t count,
               DataType type, ReduceOp op) {
  check_buffers(ctx, "allreduce", send, recv, count, type);
  check_op(ctx, "allreduce", op);
  if (count == 0) return;
  if (ctx.size == 1) {
    copy_unless_same(send, recv, count * element_size(type));
    return;
  }
  const ReduceOp reduce_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  if (algorithm == Algorithm::kAuto)
    algorithm = select_allreduce(ctx, count * element_size(type));
  switch (algorithm) {
    case Algorithm::kRing:
      ring_allreduce(ctx, send, recv, count, type, reduce_op);
      break;
    case Algorithm::kTree:
      tree_allreduce(ctx, send, recv, count, type, reduce_op);
      break;
    case Algorithm::kHalvingDoubling:
      halving_doubling_allreduce(ctx, send, recv, count, type, reduce_op);
      break;
    case Algorithm::kShm:
      shm_allreduce(ctx, send, recv, count, type, reduce_op);
      break;
    case Algorithm::kHierarchical:
      hierarchical_allreduce(ctx, send, recv, count, type, reduce_op);
      break;
    default:
      throw make_error(
          ErrorCode::kInvalidArgument,
          "allreduce on rank {}: unknown algorithm {}; pass ring, tree, hd, shm, hier or auto", ctx.rank,
          static_cast<int>(algorithm));
  }
  if (op == ReduceOp::kAvg) reduce::divide(type, recv, count, ctx.size);
}

}  // namespace tutti::collectives
