// The allreduce entry point: argument checks, trivial cases, algorithm choice, and kAvg (reduced
// as a sum, divided once at the end so every rank divides the same exact sum; with a postscale
// the division joins it inside the last reduce loop instead).
#include <cstring>

#include "collectives/allreduce_registry.hpp"
#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/device/device_collectives.hpp"
#include "core/error.hpp"
#include "reduce/reduce.hpp"

namespace tutti::collectives {
namespace {

// Whether the call scales, once its prescale and postscale are checked: only a floating sum or
// average can be scaled. kAvg's division then joins the postscale, so that it happens inside the
// last reduce loop instead of in a pass of its own.
bool take_scales(Context& ctx, DataType type, ReduceOp op) {
  if (!ctx.scaled()) return false;
  if (!is_floating(type) || (op != ReduceOp::kSum && op != ReduceOp::kAvg))
    throw make_error(ErrorCode::kInvalidArgument,
                     "allreduce on rank {}: prescale {} / postscale {} need a floating type and "
                     "sum or avg, not {} {}; scale integers yourself",
                     ctx.rank, ctx.prescale, ctx.postscale, to_string(type), to_string(op));
  if (op == ReduceOp::kAvg) ctx.postscale /= ctx.size;
  return true;
}

}  // namespace

void allreduce(Context& ctx, Algorithm algorithm, const void* send, void* recv, size_t count,
               DataType type, ReduceOp op) {
  // Buffers on a device take the registry's device entry, which checks and scales on the device.
  if (ctx.device != nullptr) return device_allreduce().run(ctx, send, recv, count, type, op);
  const size_t bytes = check_buffers(ctx, "allreduce", send, recv, count, type);
  check_op(ctx, "allreduce", op, type);
  const bool scaled = take_scales(ctx, type, op);
  bound_segment(ctx, bytes);
  // A count of 0 still meets the peers (an empty barrier under this call's signature), so a rank
  // that passed 0 while the others passed more fails with kMismatch instead of leaving them
  // waiting.
  if (count == 0) return barrier(ctx);
  if (ctx.size == 1) {
    if (scaled)
      reduce::scale(type, recv, send, ctx.prescale * ctx.postscale, count);
    else
      copy_unless_same(send, recv, bytes);
    return;
  }
  const ReduceOp reduce_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  if (algorithm == Algorithm::kAuto) algorithm = select_allreduce(ctx, bytes);
  const AllreduceAlgorithm* entry = find_allreduce(algorithm);
  if (entry == nullptr)
    throw make_error(
        ErrorCode::kInvalidArgument,
        "allreduce on rank {}: unknown algorithm {}; pass ring, tree, hd, shm, hier or "
        "auto",
        ctx.rank, static_cast<int>(algorithm));
  // transport/call_signature.cc names the algorithm by this number in a mismatch's message.
  ctx.transport.set_call_algorithm(static_cast<uint8_t>(algorithm));
  entry->run(ctx, send, recv, count, type, reduce_op);
  if (op == ReduceOp::kAvg && !scaled) reduce::divide(type, recv, count, ctx.size);
}

SegmentsRun allreduce_segments(Context& ctx, Algorithm algorithm, std::span<const Segment> segments,
                               DataType type, ReduceOp op, std::vector<std::byte>& pack) {
  using Clock = std::chrono::steady_clock;
  // The device path fuses into its own device buffer, on its stream.
  if (ctx.device != nullptr) {
    ctx.device->allreduce_segments(ctx, *ctx.device_call, segments, type, op);
    return {};
  }
  const size_t es = element_size(type);
  size_t count = 0;
  for (const Segment& s : segments) {
    check_buffers(ctx, "allreduce", s.send, s.recv, s.count, type);
    count += s.count;
  }
  const size_t bytes = count * es;
  // Results may go into the tensors while their inputs are still read only where no tensor's
  // buffers overlap another's (segments.hpp); otherwise the batch is packed, read whole first.
  const bool apart = count > 0 && tensors_apart(segments, es);
  if (ctx.size == 1 && apart) {
    // Alone, each tensor is its own result: copied (or scaled) where it is, never packed. The
    // checks and the scaling are those of one allreduce per tensor.
    for (const Segment& s : segments)
      if (s.count > 0) allreduce(ctx, algorithm, s.send, s.recv, s.count, type, op);
    return {};
  }
  if (algorithm == Algorithm::kAuto && ctx.size > 1 && count > 0)
    algorithm = select_allreduce(ctx, bytes);
  // In place: the window maps every tensor where it is, and a ring whose channels take pieces
  // sends from and receives into them (only `partial` sums, for 3 or more ranks, go to `pack`).
  const bool window = apart && algorithm == Algorithm::kShm && ctx.size > 1 &&
                      ctx.transport.local_window() != nullptr;
  const bool ring_pieces =
      apart && algorithm == Algorithm::kRing && ctx.size > 1 && ring_takes_pieces(ctx);
  // The hierarchical algorithm moves them as pieces on each host and hands the leaders' phase to
  // this function again (in place there too, or packed by the leaders alone).
  const bool hier_pieces = apart && algorithm == Algorithm::kHierarchical && ctx.size > 1 &&
                           hierarchical_takes_pieces(ctx);
  const bool in_place = window || ring_pieces || hier_pieces;
  SegmentsRun run;
  if (!in_place) {
    // Pack, reduce as one buffer (which checks and scales as any allreduce), unpack.
    if (pack.size() < bytes) pack.resize(bytes);
    const auto t0 = Clock::now();
    size_t at = 0;
    for (const Segment& s : segments) {
      if (s.count > 0) std::memcpy(pack.data() + at, s.send, s.count * es);
      at += s.count * es;
    }
    const auto t1 = Clock::now();
    allreduce(ctx, algorithm, pack.data(), pack.data(), count, type, op);
    const auto t2 = Clock::now();
    at = 0;
    for (const Segment& s : segments) {
      if (s.count > 0) std::memcpy(s.recv, pack.data() + at, s.count * es);
      at += s.count * es;
    }
    run.packed = true;
    run.pack = t1 - t0;
    run.unpack = Clock::now() - t2;
    return run;
  }
  check_op(ctx, "allreduce", op, type);
  const bool scaled = take_scales(ctx, type, op);
  bound_segment(ctx, bytes);
  ctx.transport.set_call_algorithm(static_cast<uint8_t>(algorithm));
  const ReduceOp reduce_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  const std::vector<Segment> merged = coalesced(segments, es);
  if (window) {
    shm_allreduce_segments(ctx, merged, type, reduce_op);
  } else if (hier_pieces) {
    hierarchical_allreduce_segments(ctx, merged, type, reduce_op, pack);
  } else {
    ring_allreduce_segments(ctx, SegmentView(merged, es), type, reduce_op);
  }
  if (op == ReduceOp::kAvg && !scaled)
    for (const Segment& s : segments) reduce::divide(type, s.recv, s.count, ctx.size);
  return run;
}

}  // namespace tutti::collectives
