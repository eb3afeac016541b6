// Our allreduce on device buffers: a ring over NCCL send/recv with tutti's reduce kernels, for
// what NCCL cannot reduce itself (int16, bitwise ops) or when TUTTI_DEVICE_ALLREDUCE=ring.
// Reduce-scatter then allgather, as the host ring: the count is cut into one block per rank.
//
// Each NCCL operation costs a fixed latency (a kernel launch and the proxy's handshake; several
// milliseconds where NCCL goes over sockets), so a ring step moves as much as it can in one
// grouped send/recv: a reduce-scatter step moves its whole block in chunks of up to
// Options::device_chunk_bytes (TUTTI_DEVICE_CHUNK_BYTES, 64 MiB) into device scratch, each chunk
// then reduced by one kernel; an allgather step receives its whole block straight into the output
// in one group. The first H100 run cut every block into TUTTI_SEGMENT_BYTES (256 KiB) pieces, one
// NCCL group each: 512 groups for 128 MiB on 2 ranks, 0.11 GB/s, 0.07x NCCL.
//
// Scales: every input is multiplied by prescale exactly once (the received block at the first
// step carries a raw input, later steps carry partial sums already scaled), and each element by
// postscale (and 1/size for a floating avg) exactly once, where its block becomes final. An
// integer avg is a sum whose final step divides by size (truncating, as the host path).
//
// Two ranks exchange instead: the ring's two phases would be two NCCL operations of half the count
// each way; one grouped send/recv of the whole count (per chunk) moves the same bytes each way in
// one operation, one latency instead of two, and each rank then reduces both inputs itself, in rank
// order, so both get the same bits. On the H200 with two pretend hosts (several milliseconds per
// NCCL operation) the two-phase ring ran 16 MiB at 0.64x NCCL's allreduce.
//
// Two streams: transfers on the communicator's stream, reduces on a second one (ReduceLane), so
// that a chunk is reduced while the next one moves. Events order them: a reduce waits for its
// chunk's receive; a receive into a scratch slot waits until the reduce of the chunk the slot held
// before has read it (the two slots alternate); a step that sends what the previous step reduced,
// and the end of the call, wait for every reduce so far. Where NCCL goes over sockets a transfer
// dwarfs its reduce (70 ms against 0.1 ms for 64 MiB on an H100); over NVLink a 64 MiB reduce is
// a fifth of its transfer's time, and that is what the overlap hides.
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

// One call's use of the reduce lane.
class Overlap {
 public:
  Overlap(device::DeviceApi& api, device::StreamId transfers, DeviceReduceLane& lane)
      : api_(api), transfers_(transfers), lane_(lane) {}
  // Before a receive into `slot`: the reduce that last read it has finished.
  void before_receive(int slot) {
    if (slot_used_[slot]) api_.wait(transfers_, lane_.slot_free[slot].id());
  }
  // After the receive into `slot` was enqueued: its reduce, on the lane.
  void reduce(int slot, const device::ReduceArgs& args) {
    api_.record(lane_.received[slot].id(), transfers_);
    api_.wait(lane_.stream.id(), lane_.received[slot].id());
    api_.reduce_async(args, lane_.stream.id());
    api_.record(lane_.slot_free[slot].id(), lane_.stream.id());
    slot_used_[slot] = true;
    pending_ = true;
  }
  // The transfer stream waits for every reduce enqueued so far.
  void join() {
    if (!pending_) return;
    api_.record(lane_.reduced.id(), lane_.stream.id());
    api_.wait(transfers_, lane_.reduced.id());
    pending_ = false;
  }

 private:
  device::DeviceApi& api_;
  device::StreamId transfers_;
  DeviceReduceLane& lane_;
  bool slot_used_[2] = {false, false};
  bool pending_ = false;
};

}  // namespace

DeviceReduceLane& DeviceCollectives::reduce_lane() {
  if (!reduce_lane_) {
    auto lane = std::make_unique<DeviceReduceLane>();
    lane->stream = device::Stream(device_);
    for (int i = 0; i < 2; ++i) {
      lane->received[i] = device::Event(device_);
      lane->slot_free[i] = device::Event(device_);
    }
    lane->reduced = device::Event(device_);
    reduce_lane_ = std::move(lane);
  }
  return *reduce_lane_;
}

void DeviceCollectives::ring_allreduce(Context& ctx, device::NcclComm& comm, const DeviceCall& call,
                                       const void* send, void* recv, size_t count, DataType type,
                                       ReduceOp op) {
  device::DeviceApi& api = device::api();
  const device::StreamId stream = stream_.id();
  const size_t element = element_size(type);
  const bool floating_sum = is_floating(type) && (op == ReduceOp::kSum || op == ReduceOp::kAvg);
  const double pre = floating_sum ? call.prescale : 1.0;
  // Avg is a sum divided once, where each element becomes final (ReduceArgs: never kAvg): by a
  // factor for floating types, by an integer division for the rest.
  double post = floating_sum ? call.postscale : 1.0;
  int divisor = 1;
  if (op == ReduceOp::kAvg) {
    if (is_floating(type))
      post /= size_;
    else
      divisor = size_;
  }
  const ReduceOp reduce_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;

  auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  if (size_ == 1) {
    allreduce_alone(stream, call, send, recv, count, type, op);
    return;
  }

  const size_t segment = std::max<size_t>(1, call.options->device_chunk_bytes / element);
  Overlap overlap(api, stream, reduce_lane());
  if (size_ == 2) {
    const int peer = 1 - rank_;
    for (size_t done = 0, slot = 0; done < count; done += segment, slot ^= 1) {
      const size_t n = std::min(segment, count - done);
      void* theirs = scratch(ctx, call, static_cast<int>(slot), std::min(segment, count) * element);
      const std::byte* mine = in + done * element;
      overlap.before_receive(static_cast<int>(slot));
      comm.group_start();
      comm.send(mine, n * element, peer, stream);
      comm.recv(theirs, n * element, peer, stream);
      comm.group_end();
      // Rank 0's input is a, rank 1's is b, on both ranks.
      const void* a = rank_ == 0 ? static_cast<const void*>(mine) : theirs;
      const void* b = rank_ == 0 ? theirs : static_cast<const void*>(mine);
      // In place, out + done is mine: its send was enqueued before this reduce is.
      overlap.reduce(static_cast<int>(slot), {.out = out + done * element,
                                              .a = a,
                                              .b = b,
                                              .count = n,
                                              .type = type,
                                              .op = reduce_op,
                                              .scale_a = pre,
                                              .scale_b = pre,
                                              .post = post,
                                              .divisor = divisor});
    }
    overlap.join();
    return;
  }

  const Blocks blocks{count, size_};
  const size_t largest = blocks.length(size_ - 1);  // the last block is never shorter
  void* slots[2] = {scratch(ctx, call, 0, std::min(segment, largest) * element),
                    scratch(ctx, call, 1, std::min(segment, largest) * element)};
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
    // This step sends what the previous step's reduces wrote.
    overlap.join();
    int slot = 0;
    for (size_t done = 0; done < std::max(send_length, recv_length); done += segment, slot ^= 1) {
      const size_t sending = done < send_length ? std::min(segment, send_length - done) : 0;
      const size_t receiving = done < recv_length ? std::min(segment, recv_length - done) : 0;
      if (receiving > 0) overlap.before_receive(slot);
      comm.group_start();
      if (sending > 0) comm.send(source + done * element, sending * element, next, stream);
      if (receiving > 0) comm.recv(slots[slot], receiving * element, previous, stream);
      comm.group_end();
      if (receiving == 0) continue;
      const size_t at = (blocks.begin(recv_block) + done) * element;
      overlap.reduce(slot, {.out = out + at,
                            .a = slots[slot],
                            .b = in + at,
                            .count = receiving,
                            .type = type,
                            .op = reduce_op,
                            .scale_a = step == 0 ? pre : 1.0,
                            .scale_b = pre,
                            .post = final_step ? post : 1.0,
                            .divisor = final_step ? divisor : 1});
    }
  }
  overlap.join();
  // Allgather: at step s this rank sends the final block rank+1-s and receives block rank-s, each
  // whole, straight between the outputs: one group per step.
  for (int step = 0; step < size_ - 1; ++step) {
    const int send_block = wrap(rank_ + 1 - step, size_);
    const int recv_block = wrap(rank_ - step, size_);
    const size_t send_length = blocks.length(send_block);
    const size_t recv_length = blocks.length(recv_block);
    if (send_length == 0 && recv_length == 0) continue;
    comm.group_start();
    if (send_length > 0)
      comm.send(out + blocks.begin(send_block) * element, send_length * element, next, stream);
    if (recv_length > 0)
      comm.recv(out + blocks.begin(recv_block) * element, recv_length * element, previous, stream);
    comm.group_end();
  }
}

}  // namespace tutti::collectives
