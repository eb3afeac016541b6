// Reduce to a root. Small messages run the allreduce the cost model picks (tree, halving-doubling
// or the shared-memory window: log(size) latency) and ranks other than the root drop the result.
// Large ones run a ring reduce-scatter, after which each rank holds one reduced chunk, and gather
// the chunks to the root: every rank sends about (size-1)/size of the data once, half of what an
// allreduce moves, and the root receives it all once.
#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/ring_pipeline.hpp"
#include "collectives/rooted_exchange.hpp"
#include "collectives/scratch_slots.hpp"
#include "reduce/reduce.hpp"

namespace tutti::collectives {
namespace {

// Below this the allreduce's fewer steps win over the ring's size-1 steps plus the gather.
constexpr size_t kRingFromBytes = 64 << 10;

}  // namespace

void reduce(Context& ctx, const void* send, void* recv, size_t count, DataType type, ReduceOp op,
            int root) {
  constexpr std::string_view kWhat = "reduce";
  check_root(ctx, kWhat, root);
  const bool is_root = ctx.rank == root;
  // Ranks other than the root need no recv buffer.
  const size_t bytes = check_buffers(ctx, kWhat, send, is_root ? recv : send, count, type);
  check_op(ctx, kWhat, op, type);
  if (count == 0) return barrier(ctx);  // meets the peers: see allreduce
  if (ctx.size == 1) {
    copy_unless_same(send, recv, bytes);
    return;
  }
  std::byte* result = is_root ? bytes_of(recv) : nullptr;
  if (bytes < kRingFromBytes) {
    if (!is_root) result = ctx.scratch.get(kResultSlot, bytes).data();
    allreduce(ctx, Algorithm::kAuto, send, result, count, type, op);
    return;
  }
  bound_segment(ctx, bytes);
  const size_t es = element_size(type);
  const Split chunks(count, static_cast<size_t>(ctx.size));
  const auto me = static_cast<size_t>(ctx.rank);
  // The chunk this rank ends the ring with: in place in the root's recv, in scratch elsewhere.
  std::byte* own = is_root ? result + chunks.begin(me) * es
                           : ctx.scratch.get(kResultSlot, chunks.size(me) * es).data();
  const int first = wrap(ctx.rank - 1, ctx.size);
  std::byte* partial = nullptr;
  if (ctx.size > 2) partial = ctx.scratch.get(kPartialSlot, bytes).data();
  const RingPlan plan{.reduce_steps = ctx.size - 1, .gather_steps = 0, .first_chunk = first};
  const RingBuffers buffers{
      .first_send = bytes_of(send) + chunks.begin(static_cast<size_t>(first)) * es,
      .input = bytes_of(send),
      .partial = partial,
      .output = own,
      .output_is_one_chunk = true,
  };
  const ReduceOp ring_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  run_ring(ctx, chunks, plan, buffers, type, ring_op, kWhat);
  // The ring used tag steps 0 .. size-2.
  gather_blocks(ctx, own, result, chunks, es, root, static_cast<uint32_t>(ctx.size), kWhat);
  if (is_root && op == ReduceOp::kAvg) reduce::divide(type, recv, count, ctx.size);
}

}  // namespace tutti::collectives
