// One collective at one size, as nccl-tests runs it: how many elements each side holds, how to
// fill the buffers for a checked run, the call itself (out of place or in place), the check, and
// the bus bandwidth factor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "bench_options.hpp"
#include "device/device_buffers.hpp"
#include "tutti/tutti.hpp"

namespace tutti::bench {

// Element counts, with nccl-tests' getCollByteCount semantics for `count` = size / element size.
struct Layout {
  size_t send_count = 0;
  size_t recv_count = 0;
  size_t param_count = 0;          // the count argument of the call; the "count" column
  size_t send_inplace_offset = 0;  // in place: send = recv buffer + offset * rank
  size_t recv_inplace_offset = 0;  // in place: recv = recv buffer + offset * rank
};
Layout layout_for(Collective c, size_t count, int nranks);

// The "size" column: the larger of what is sent and received, in bytes.
inline uint64_t row_bytes(const Layout& l, DataType t) {
  return std::max(l.send_count, l.recv_count) * element_size(t);
}

// algbw and busbw in GB/s (1e9 bytes) for one call taking `seconds`.
struct Bandwidth {
  double alg = 0;
  double bus = 0;
};
Bandwidth bandwidth(Collective c, size_t param_count, DataType t, double seconds, int nranks);

struct RunSpec {
  Collective collective;
  DataType type;
  ReduceOp op;
  int root;
  bool in_place;
  Layout layout;
};

class CollectiveRunner {
 public:
  // send and recv are at least as large as every size of the sweep needs; allocated once.
  // With `device` (--device cuda), the calls run on its GPU buffers, which mirror send and recv:
  // fill() uploads, count_wrong() downloads first.
  CollectiveRunner(Communicator& comm, std::span<std::byte> send, std::span<std::byte> recv,
                   DeviceBuffers* device = nullptr)
      : comm_(comm), send_(send), recv_(recv), device_(device) {}

  // Puts this rank's inputs in place and poisons what must be received.
  void fill(const RunSpec& spec);
  // One call of the collective; with --device cuda it runs on the buffers' own stream (a
  // non-blocking one, as the NCCL baseline's) and returns once its work there has completed, as
  // the baseline waits for its stream after each ncclAllReduce (a call that only enqueues, like a
  // world of one's allreduce, is not timed as free).
  void run(const RunSpec& spec);
  // Elements of this rank's result that differ from the expected ones.
  uint64_t count_wrong(const RunSpec& spec);

  // Where the call reads its input and writes its result (the same place when in place), in the
  // host buffers.
  std::byte* send_ptr(const RunSpec& spec) const;
  std::byte* recv_ptr(const RunSpec& spec) const;
  // The same places in the buffers the call uses: the device twins with --device cuda.
  std::byte* call_send_ptr(const RunSpec& spec) const;
  std::byte* call_recv_ptr(const RunSpec& spec) const;

 private:
  void fill_host(const RunSpec& spec);
  void issue(const RunSpec& spec);
  uint64_t count_wrong_host(const RunSpec& spec) const;

  Communicator& comm_;
  std::span<std::byte> send_;
  std::span<std::byte> recv_;
  DeviceBuffers* device_ = nullptr;
};

}  // namespace tutti::bench
