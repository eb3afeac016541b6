// Ring allreduce: a reduce-scatter then an allgather around the ring, each chunk pipelined in
// segments (ring_pipeline.cc). Bandwidth-optimal: every rank sends 2 (size-1)/size of the data.
#include <algorithm>
#include <cstdint>

#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/placement.hpp"
#include "collectives/ring_pipeline.hpp"
#include "transport/transport.hpp"

namespace tutti::collectives {
namespace {

// A large message between 2 ranks over TCP goes through as one ring per slab, in turn
// (placement.hpp, ring_slab_bytes); each slab's steps get tags of their own. Calls
// run(offset, elements, chunks, plan) per slab, in order.
template <typename RunSlab>
void for_each_slab(Context& ctx, size_t count, size_t element_bytes, RunSlab&& run) {
  const size_t slab_bytes = ring_slab_bytes(ctx);
  const size_t per_slab = slab_bytes == 0 ? count : std::max<size_t>(1, slab_bytes / element_bytes);
  const uint32_t steps = 2 * static_cast<uint32_t>(ctx.size - 1);
  uint32_t slab = 0;
  for (size_t offset = 0; offset < count; offset += per_slab, ++slab) {
    const size_t n = std::min(per_slab, count - offset);
    const Split chunks(n, static_cast<size_t>(ctx.size));
    const RingPlan plan{.reduce_steps = ctx.size - 1,
                        .gather_steps = ctx.size - 1,
                        .first_chunk = ctx.rank,
                        .tag_base = slab * steps};
    run(offset, chunks, plan);
  }
}

}  // namespace

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
  for_each_slab(ctx, count, element_bytes,
                [&](size_t offset, const Split& chunks, const RingPlan& plan) {
                  const std::byte* in = bytes_of(send) + offset * element_bytes;
                  std::byte* out = bytes_of(recv) + offset * element_bytes;
                  // Out of place, reduce steps combine send with the incoming segment straight
                  // into recv, and the rank's own chunk arrives in recv during the allgather, so
                  // send is never copied to recv.
                  const RingBuffers buffers{
                      .first_send = in + chunks.begin(ctx.rank) * element_bytes,
                      .input = in,
                      .partial = out,
                      .output = out,
                  };
                  run_ring(ctx, chunks, plan, buffers, type, op, "ring allreduce");
                });
}

bool ring_takes_pieces(Context& ctx) {
  if (ctx.size <= 1) return false;
  return ctx.transport.channel(wrap(ctx.rank + 1, ctx.size)).takes_pieces() &&
         ctx.transport.channel(wrap(ctx.rank - 1, ctx.size)).takes_pieces();
}

void ring_allreduce_segments(Context& ctx, const SegmentView& tensors, DataType type, ReduceOp op) {
  const size_t count = tensors.count();
  if (count == 0 || ctx.size <= 1) return;
  const size_t element_bytes = element_size(type);
  // The slabs, steps and tags of ring_allreduce exactly: a rank that packs (its channels take no
  // pieces) sends and expects the same messages as one that does not.
  for_each_slab(ctx, count, element_bytes,
                [&](size_t offset, const Split& chunks, const RingPlan& plan) {
                  const RingBuffers buffers{
                      .tensors = &tensors,
                      .tensors_offset = offset,
                  };
                  run_ring(ctx, chunks, plan, buffers, type, op, "ring allreduce");
                });
}

}  // namespace tutti::collectives
