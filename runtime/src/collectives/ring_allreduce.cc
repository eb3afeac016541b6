// Ring allreduce: a reduce-scatter then an allgather around the ring, each chunk pipelined in
// segments (ring_pipeline.cc). Bandwidth-optimal: every rank sends 2 (size-1)/size of the data.
#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/ring_pipeline.hpp"

namespace tutti::collectives {

void ring_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op) {
  check_buffers(ctx, "ring allreduce", send, recv, count, type);
  check_op(ctx, "ring allreduce", op, type);
  if (count == 0) return;
  const size_t element_bytes = element_size(type);
  if (ctx.size == 1) {
    copy_unless_same(send, recv, count * element_bytes);
    return;
  }
  const Split chunks(count, static_cast<size_t>(ctx.size));
  const RingPlan plan{
      .reduce_steps = ctx.size - 1, .gather_steps = ctx.size - 1, .first_chunk = ctx.rank};
  // Out of place, reduce steps combine send with the incoming segment straight into recv, and the
  // rank's own chunk arrives in recv during the allgather, so send is never copied to recv.
  const RingBuffers buffers{
      .first_send = bytes_of(send) + chunks.begin(ctx.rank) * element_bytes,
      .input = bytes_of(send),
      .partial = bytes_of(recv),
      .output = bytes_of(recv),
  };
  run_ring(ctx, chunks, plan, buffers, type, op, "ring allreduce");
}

}  // namespace tutti::collectives
