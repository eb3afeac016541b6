// Allreduce through the transport's LocalWindow (all ranks on one host).
//
// Large messages, per chunk: every rank copies its input (all but its own slice) into its window
// area; then reduces its own slice straight from its own input plus the others' staged copies,
// writing the result to its area; then copies every other slice's result from its owner's area
// to its output. Each byte crosses between ranks once in each direction and nobody reduces more
// than its share. The three stages run one chunk apart (stage j, reduce j-1, copy out j-2) with
// per-chunk counters, so a rank that is ahead keeps working instead of waiting.
//
// Small messages take one step: everyone stages everything, then everyone reduces everything
// itself, one flag round instead of three.
//
// Every rank reduces in rank order, so all ranks get the same bits.
#include <cstring>

#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/shm_plan.hpp"
#include "core/error.hpp"
#include "reduce/reduce.hpp"
#include "transport/local_window.hpp"

namespace tutti::collectives {
namespace {

// The window counters this algorithm keeps; each counts chunks since the communicator started.
enum Counter : int {
  kStaged = 0,   // chunks whose input this rank has staged
  kReduced = 1,  // chunks whose slice this rank has reduced into its area
  kDone = 2,     // chunks this rank has finished reading from the others' areas
};

class ShmAllreduce {
 public:
  ShmAllreduce(Context& ctx, transport::LocalWindow& window, const void* send, void* recv,
               size_t count, DataType type, ReduceOp op)
      : ctx_(ctx),
        w_(window),
        plan_(plan_shm(window.area_bytes(), window.size(), element_size(type))),
        send_(bytes_of(send)),
        recv_(bytes_of(recv)),
        count_(count),
        type_(type),
        op_(op),
        // Every rank completed the same chunks before this call.
        first_(window.own_flag(kDone)) {}

  void run() {
    if (count_ <= plan_.single_step_elements) {
      single_step();
      return;
    }
    const size_t chunks = (count_ + plan_.chunk_elements - 1) / plan_.chunk_elements;
    for (size_t j = 0; j < chunks + 2; ++j) {
      if (j < chunks) stage(j);
      if (j >= 1 && j - 1 < chunks) reduce_own_slice(j - 1);
      if (j >= 2) copy_out(j - 2);
    }
  }

 private:
  size_t es() const { return plan_.element_bytes; }
  uint64_t chunk_id(size_t j) const { return first_ + j; }
  std::byte* slot(int rank, uint64_t g) const {
    return w_.area(rank) + (g % plan_.slots) * plan_.slot_bytes;
  }
  size_t chunk_offset(size_t j) const { return j * plan_.chunk_elements; }
  size_t chunk_size(size_t j) const {
    return std::min(plan_.chunk_elements, count_ - chunk_offset(j));
  }
  Slice slice(size_t n, int rank) const { return slice_of(n, w_.size(), rank, es()); }

  // Before overwriting slot g % slots, the chunk that used it last must be read by everyone.
  void claim_slot(uint64_t g) {
    if (g + 1 > plan_.slots)
      w_.wait_peers(kDone, g + 1 - plan_.slots, ctx_.deadline,
                    "the shm allreduce (peers still reading the window slot this rank reuses)");
  }

  // dst = src(0) op src(1) op ... in rank order.
  template <typename Source>
  void reduce_in_rank_order(std::byte* dst, Source src, size_t n) {
    reduce::combine(type_, op_, dst, src(0), src(1), n);
    for (int r = 2; r < w_.size(); ++r) reduce::accumulate(type_, op_, dst, src(r), n);
  }

  void single_step() {
    const uint64_t g = chunk_id(0);
    const size_t bytes = count_ * es();
    claim_slot(g);
    std::memcpy(slot(w_.rank(), g), send_, bytes);
    w_.publish(kStaged, g + 1);
    w_.wait_peers(kStaged, g + 1, ctx_.deadline, "the shm allreduce (peers staging their input)");
    // Own data from the window too: in place, recv is overwritten before the last source is read.
    reduce_in_rank_order(
        recv_, [&](int r) -> const std::byte* { return slot(r, g); }, count_);
    w_.publish(kDone, g + 1);
  }

  void stage(size_t j) {
    const uint64_t g = chunk_id(j);
    const size_t off = chunk_offset(j), n = chunk_size(j);
    const Slice own = slice(n, w_.rank());
    claim_slot(g);
    std::byte* area = slot(w_.rank(), g);
    const std::byte* in = send_ + off * es();
    std::memcpy(area, in, own.first * es());  // nobody reads this rank's copy of its own slice
    size_t after = own.first + own.count;
    std::memcpy(area + after * es(), in + after * es(), (n - after) * es());
    w_.publish(kStaged, g + 1);
  }

  void reduce_own_slice(size_t j) {
    const uint64_t g = chunk_id(j);
    const size_t off = chunk_offset(j), n = chunk_size(j);
    const Slice own = slice(n, w_.rank());
    w_.wait_peers(kStaged, g + 1, ctx_.deadline, "the shm allreduce (peers staging a chunk)");
    if (own.count > 0) {
      const size_t at = own.first * es();
      std::byte* result = slot(w_.rank(), g) + at;
      // The result goes to the area first: in place, the output slice is also an input.
      reduce_in_rank_order(
          result,
          [&](int r) -> const std::byte* {
            return r == w_.rank() ? send_ + off * es() + at : slot(r, g) + at;
          },
          own.count);
      std::memcpy(recv_ + off * es() + at, result, own.count * es());
    }
    w_.publish(kReduced, g + 1);
  }

  void copy_out(size_t j) {
    const uint64_t g = chunk_id(j);
    const size_t off = chunk_offset(j), n = chunk_size(j);
    w_.wait_peers(kReduced, g + 1, ctx_.deadline,
                  "the shm allreduce (peers reducing their slices)");
    for (int r = 0; r < w_.size(); ++r) {
      if (r == w_.rank()) continue;
      const Slice s = slice(n, r);
      std::memcpy(recv_ + (off + s.first) * es(), slot(r, g) + s.first * es(), s.count * es());
    }
    w_.publish(kDone, g + 1);
  }

  Context& ctx_;
  transport::LocalWindow& w_;
  const ShmPlan plan_;
  const std::byte* send_;
  std::byte* recv_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const uint64_t first_;
};

}  // namespace

void shm_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                   ReduceOp op) {
  transport::LocalWindow* window = ctx.transport.local_window();
  if (window == nullptr)
    throw make_error(ErrorCode::kConfig,
                     "rank {}: TUTTI_ALGO=shm needs every rank on one host sharing a memory "
                     "window, but this world has none: {}. Use TUTTI_ALGO=auto (or ring, tree, "
                     "hd) for ranks on several hosts",
                     ctx.rank, ctx.transport.no_local_window_reason());
  if (window->size() != ctx.size || window->rank() != ctx.rank)
    throw make_error(ErrorCode::kInternal, "rank {} of {}: window of rank {} of {}", ctx.rank,
                     ctx.size, window->rank(), window->size());
  if (count == 0) return;
  if (ctx.size == 1) {
    copy_unless_same(send, recv, count * element_size(type));
    return;
  }
  ShmAllreduce(ctx, *window, send, recv, count, type, op).run();
}

}  // namespace tutti::collectives
