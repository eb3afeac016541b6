// Ring reduce-scatter. The ring starts one chunk "behind" (first chunk rank-1) so that the chunk a
// rank finishes with is its own block. Intermediate partial sums go to scratch because send is
// read-only; only the final block is written to recv.
#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/ring_pipeline.hpp"
#include "collectives/scratch_slots.hpp"
#include "reduce/reduce.hpp"

namespace tutti::collectives {

void reduce_scatter(Context& ctx, const void* send, void* recv, size_t recv_count, DataType type,
                    ReduceOp op) {
  bound_segment(ctx, check_buffers(ctx, "reduce_scatter", send, recv, recv_count, type,
                                   static_cast<size_t>(ctx.size)));
  check_op(ctx, "reduce_scatter", op, type);
  if (recv_count == 0) return barrier(ctx);  // meets the peers: see allreduce
  const size_t element_bytes = element_size(type);
  const auto size = static_cast<size_t>(ctx.size);
  if (ctx.size == 1) {
    copy_unless_same(send, recv, recv_count * element_bytes);
    return;
  }
  const Split blocks(recv_count * size, size);
  const int first = wrap(ctx.rank - 1, ctx.size);
  const RingPlan plan{.reduce_steps = ctx.size - 1, .gather_steps = 0, .first_chunk = first};
  std::byte* partial = nullptr;
  // With two ranks the single step is the last one and writes recv directly.
  if (ctx.size > 2)
    partial = ctx.scratch.get(kPartialSlot, recv_count * size * element_bytes).data();
  const RingBuffers buffers{
      .first_send = bytes_of(send) + blocks.begin(first) * element_bytes,
      .input = bytes_of(send),
      .partial = partial,
      .output = bytes_of(recv),
      .output_is_one_chunk = true,
  };
  run_ring(ctx, blocks, plan, buffers, type, op, "reduce_scatter");
  if (op == ReduceOp::kAvg) reduce::divide(type, recv, recv_count, ctx.size);
}

}  // namespace tutti::collectives

namespace tutti::collectives {

void reduce_scatterv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
                     DataType type, ReduceOp op) {
  constexpr std::string_view kWhat = "reduce_scatterv";
  const size_t total = check_counts(ctx, kWhat, "counts", counts, type);
  check_op(ctx, kWhat, op, type);
  const auto me = static_cast<size_t>(ctx.rank);
  check_pointer(ctx, kWhat, "send", send, total);
  check_pointer(ctx, kWhat, "recv", recv, counts[me]);
  const size_t es = element_size(type);
  bound_segment(ctx, total * es);
  if (ctx.size == 1) {
    copy_unless_same(send, recv, total * es);
    return;
  }
  if (total == 0) return barrier(ctx);  // meets the peers: see allreduce
  const Split blocks = Split::of_counts(counts);
  const int first = wrap(ctx.rank - 1, ctx.size);
  const RingPlan plan{.reduce_steps = ctx.size - 1, .gather_steps = 0, .first_chunk = first};
  std::byte* partial = nullptr;
  if (ctx.size > 2) partial = ctx.scratch.get(kPartialSlot, total * es).data();
  const RingBuffers buffers{
      .first_send = bytes_of(send) + blocks.begin(static_cast<size_t>(first)) * es,
      .input = bytes_of(send),
      .partial = partial,
      .output = bytes_of(recv),
      .output_is_one_chunk = true,
  };
  run_ring(ctx, blocks, plan, buffers, type, op == ReduceOp::kAvg ? ReduceOp::kSum : op, kWhat);
  if (op == ReduceOp::kAvg) reduce::divide(type, recv, counts[me], ctx.size);
}

}  // namespace tutti::collectives
