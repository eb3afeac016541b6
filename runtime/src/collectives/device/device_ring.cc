// Our allreduce on device buffers: a ring over NCCL send/recv with tutti's reduce kernels, for
// what NCCL cannot reduce itself (int16, bitwise ops) or when TUTTI_DEVICE_ALLREDUCE=ring.
// Reduce-scatter then allgather, as the host ring: the count is cut into one block per rank, and
// each block into segments of segment_bytes that go as one grouped send/recv each.
//
// Scales: every input is multiplied by prescale exactly once (the received block at the first
// step carries a raw input, later steps carry partial sums already scaled), and each element by
// postscale (and 1/size for avg) exactly once, where its block becomes final.
//
// Everything is enqueued on one stream, so a segment's reduce follows its receive; the two
// scratch slots alternate so that the next receive never lands on a buffer a reduce still reads
// once the work is spread over streams.
#include <algorithm>

#include "collectives/device/device_collectives.hpp"
#include "core/error.hpp"

namespace tutti::collectives {

namespace {

struct Blocks {
  size_t count;
  int size;
  size_t begin(int block) const {
    return count * static_cast<size_t>(block) / static_cast<size_t>(size);
  }
  size_t length(int block) const { return begin(block + 1) - begin(block); }
};

int wrap(int i, int size) {
  return ((i % size) + size) % size;
}

}  // namespace

void DeviceCollectives::ring_allreduce(device::NcclComm& comm, const DeviceCall& call,
                                       const void* send, void* recv, size_t count, DataType type,
                                       ReduceOp op, size_t segment_bytes) {
  device::DeviceApi& api = device::api();
  const device::StreamId stream = stream_.id();
  const size_t element = element_size(type);
  const bool floating_sum = is_floating(type) && (op == ReduceOp::kSum || op == ReduceOp::kAvg);
  const double pre = floating_sum ? call.prescale : 1.0;
  // Avg is a sum divided once, where each element becomes final (ReduceArgs: never kAvg).
  double post = floating_sum ? call.postscale : 1.0;
  if (op == ReduceOp::kAvg) post /= size_;
  const ReduceOp reduce_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;

  auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  if (size_ == 1) {
    if (pre == 1.0 && post == 1.0) {
      if (send != recv) api.copy_async(recv, send, count * element, stream);
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
    return;
  }

  const Blocks blocks{count, size_};
  const size_t segment = std::max<size_t>(1, segment_bytes / element);
  const size_t largest = blocks.length(size_ - 1);  // the last block is never shorter
  void* slots[2] = {scratch(0, std::min(segment, largest) * element),
                    scratch(1, std::min(segment, largest) * element)};
  const int next = wrap(rank_ + 1, size_);
  const int previous = wrap(rank_ - 1, size_);

  // Reduce-scatter: at step s this rank sends block rank-s and combines block rank-s-1.
  for (int step = 0; step < size_ - 1; ++step) {
    const int send_block = wrap(rank_ - step, size_);
    const int recv_block = wrap(rank_ - step - 1, size_);
    // Step 0 sends raw input; later steps send the partial sums the previous step left in recv.
    const std::byte* source = (step == 0 ? in : out) + blocks.begin(send_block) * element;
    const bool final_step = step == size_ - 2;
    const size_t send_length = blocks.length(send_block);
    const size_t recv_length = blocks.length(recv_block);
    int slot = 0;
    for (size_t done = 0; done < std::max(send_length, recv_length); done += segment, slot ^= 1) {
      const size_t sending = done < send_length ? std::min(segment, send_length - done) : 0;
      const size_t receiving = done < recv_length ? std::min(segment, recv_length - done) : 0;
      comm.group_start();
      if (sending > 0) comm.send(source + done * element, sending * element, next, stream);
      if (receiving > 0) comm.recv(slots[slot], receiving * element, previous, stream);
      comm.group_end();
      if (receiving == 0) continue;
      const size_t at = (blocks.begin(recv_block) + done) * element;
      api.reduce_async({.out = out + at,
                        .a = slots[slot],
                        .b = in + at,
                        .count = receiving,
                        .type = type,
                        .op = reduce_op,
                        .scale_a = step == 0 ? pre : 1.0,
                        .scale_b = pre,
                        .post = final_step ? post : 1.0},
                       stream);
    }
  }
  // Allgather: at step s this rank sends the final block rank+1-s and receives block rank-s.
  for (int step = 0; step < size_ - 1; ++step) {
    const int send_block = wrap(rank_ + 1 - step, size_);
    const int recv_block = wrap(rank_ - step, size_);
    const size_t send_length = blocks.length(send_block);
    const size_t recv_length = blocks.length(recv_block);
    for (size_t done = 0; done < std::max(send_length, recv_length); done += segment) {
      const size_t sending = done < send_length ? std::min(segment, send_length - done) : 0;
      const size_t receiving = done < recv_length ? std::min(segment, recv_length - done) : 0;
      comm.group_start();
      if (sending > 0)
        comm.send(out + (blocks.begin(send_block) + done) * element, sending * element, next,
                  stream);
      if (receiving > 0)
        comm.recv(out + (blocks.begin(recv_block) + done) * element, receiving * element, previous,
                  stream);
      comm.group_end();
    }
  }
}

}  // namespace tutti::collectives
