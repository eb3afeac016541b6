// An allreduce on device buffers in a world of one: nothing to exchange, so no NCCL, no stream of
// ours, no events and no host wait. The work (a copy out of place, the scale kernel when scaled,
// nothing in place) is enqueued on the caller's stream and the call returns, as ncclAllReduce
// does: the caller's stream orders it, which is the API's contract. On the first H100 run the
// full path (two events, a no-op NCCL call, the host wait) cost about 2 us more than
// ncclAllReduce per call in place, and 118 against 99 us out of place at 128 MiB.
#include "collectives/device/device_collectives.hpp"

namespace tutti::collectives {

void DeviceCollectives::allreduce_alone(device::StreamId stream, const DeviceCall& call,
                                        const void* send, void* recv, size_t count, DataType type,
                                        ReduceOp op) {
  device::DeviceApi& api = device::api();
  // Scales reach sum and avg on floating types only; avg over one rank divides by one, and an
  // integer avg is the input itself.
  const bool floating_sum = is_floating(type) && (op == ReduceOp::kSum || op == ReduceOp::kAvg);
  const double pre = floating_sum ? call.prescale : 1.0;
  const double post = floating_sum ? call.postscale : 1.0;
  if (pre == 1.0 && post == 1.0) {
    if (send != recv) api.copy_async(recv, send, count * element_size(type), stream);
    return;
  }
  // A unary scale through the binary kernel: x*s + x*s, halved (exact: powers of two).
  api.reduce_async({.out = recv,
                    .a = send,
                    .b = send,
                    .count = count,
                    .type = type,
                    .op = ReduceOp::kSum,
                    .scale_a = pre,
                    .scale_b = pre,
                    .post = post * 0.5},
                   stream);
}

}  // namespace tutti::collectives
