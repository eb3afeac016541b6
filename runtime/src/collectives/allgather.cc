// Ring allgather: each rank's block travels size-1 hops around the ring, in pipelined segments.
#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/ring_pipeline.hpp"

namespace tutti::collectives {

void allgather(Context& ctx, const void* send, void* recv, size_t count, DataType type) {
  bound_segment(
      ctx, check_buffers(ctx, "allgather", send, recv, count, type, static_cast<size_t>(ctx.size)));
  if (count == 0) return barrier(ctx);  // meets the peers: see allreduce
  const size_t block_bytes = count * element_size(type);
  std::byte* own_block = bytes_of(recv) + static_cast<size_t>(ctx.rank) * block_bytes;
  // The ring never writes this rank's own block, so the copy may happen before the ring starts.
  copy_unless_same(send, own_block, block_bytes);
  if (ctx.size == 1) return;
  const Split blocks(count * static_cast<size_t>(ctx.size), static_cast<size_t>(ctx.size));
  const RingPlan plan{.reduce_steps = 0, .gather_steps = ctx.size - 1, .first_chunk = ctx.rank};
  const RingBuffers buffers{.first_send = bytes_of(send), .output = bytes_of(recv)};
  run_ring(ctx, blocks, plan, buffers, type, ReduceOp::kSum, "allgather");
}

}  // namespace tutti::collectives

namespace tutti::collectives {

void allgatherv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
                DataType type) {
  constexpr std::string_view kWhat = "allgatherv";
  const size_t total = check_counts(ctx, kWhat, "counts", counts, type);
  const auto me = static_cast<size_t>(ctx.rank);
  check_pointer(ctx, kWhat, "send", send, counts[me]);
  check_pointer(ctx, kWhat, "recv", recv, total);
  const size_t es = element_size(type);
  bound_segment(ctx, total * es);
  const Split blocks = Split::of_counts(counts);
  copy_unless_same(send, bytes_of(recv) + blocks.begin(me) * es, counts[me] * es);
  if (ctx.size == 1) return;
  // Every count zero: nothing moves, but the peers still meet (see allreduce).
  if (total == 0) return barrier(ctx);
  const RingPlan plan{.reduce_steps = 0, .gather_steps = ctx.size - 1, .first_chunk = ctx.rank};
  const RingBuffers buffers{.first_send = bytes_of(send), .output = bytes_of(recv)};
  run_ring(ctx, blocks, plan, buffers, type, ReduceOp::kSum, kWhat);
}

}  // namespace tutti::collectives
