// The one ring engine behind ring allreduce, allgather and reduce_scatter.
//
// The data is cut into `size` chunks. At step s a rank sends chunk (first - s) to the next rank and
// receives chunk (first - s - 1) from the previous one, so what it receives at step s is exactly
// what it sends at step s + 1. The engine exploits that at segment granularity: a received segment
// is reduced (reduce-scatter steps) or stored (allgather steps) and forwarded at once, and the
// receives of the next few segments are already posted while one is being reduced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectives/chunking.hpp"
#include "collectives/context.hpp"
#include "collectives/segments.hpp"
#include "tutti/types.hpp"

namespace tutti::collectives {

struct RingPlan {
  int reduce_steps = 0;   // size - 1 for a reduce-scatter phase, else 0
  int gather_steps = 0;   // size - 1 for an allgather phase, else 0
  int first_chunk = 0;    // the chunk sent at step 0
  uint32_t tag_base = 0;  // added to each step's tag: one call run as several rings in turn
};

struct RingBuffers {
  const std::byte* first_send = nullptr;  // the data of first_chunk sent at step 0
  const std::byte* input = nullptr;       // own contribution of every chunk (reduce steps)
  std::byte* partial = nullptr;           // results of reduce steps other than the last
  std::byte* output = nullptr;            // final chunks, at their chunk offsets...
  bool output_is_one_chunk = false;       // ...or only the one chunk the reduce-scatter ends with
  // When set, the data are these tensors, at element `tensors_offset` on: their send sides are
  // the input (first_send and input above are unused) and their recv sides the output (`output`
  // is unused). Partial sums go to their recv sides too, as a flat call's go to `output` (`partial`
  // is unused). Segments leave from and arrive into the tensors as pieces (Channel::takes_pieces,
  // which both ring neighbours' channels must have).
  const SegmentView* tensors = nullptr;
  size_t tensors_offset = 0;
};

// input/partial/output are indexed by the chunk's element offset in `chunks`. Waits for every
// send before returning.
void run_ring(Context& ctx, const Split& chunks, const RingPlan& plan, const RingBuffers& buffers,
              DataType type, ReduceOp op, std::string_view what);

}  // namespace tutti::collectives
