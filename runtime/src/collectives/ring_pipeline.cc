#include "collectives/ring_pipeline.hpp"

#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>
#include <type_traits>
#include <vector>

#include "collectives/placement.hpp"
#include "collectives/scratch_slots.hpp"
#include "reduce/reduce.hpp"
#include "transport/transport.hpp"

namespace tutti::collectives {
namespace {

// Receives posted ahead of the one being reduced: at most sixteen (two is the minimum for
// overlap). More in flight hide a busy peer's jitter; their scratch stays within kStagingBudget,
// since window_for shrinks the window for large segments.
constexpr size_t kWindow = 16;
// Segments of step 0 sent before anything arrived from the previous rank. Two keep the link busy
// while the first incoming segment travels; more only land in a late peer's stash (a copy each):
// with back-to-back 4 MiB calls between 2 pods, sending the whole window up front (16) ran about
// 12% slower than two when the network was fast, and level when slow (docs/PERFORMANCE.md).
constexpr size_t kFirstSends = 2;
// Completed send requests are dropped once this many pile up, so long pipelines stay small.
constexpr size_t kPruneSends = 256;
// Before sleeping in the transport's wait, poll the channels (yielding between polls) this long: a
// TCP wait that sleeps in poll() pays a wake-up per segment, which on this kind of machine (HZ=250,
// no preemption) can cost a scheduler tick when the CPUs are busy. Only when every rank can have a
// CPU of its own; otherwise polling steals the CPU from the rank we wait for.
constexpr auto kSpinBudget = std::chrono::microseconds(200);
// The staging scratch (receives in flight of a reduce step) stays within this when segments are
// large (grown over TCP, or set so): the window shrinks instead, to no fewer than two receives.
constexpr size_t kStagingBudget = 16 << 20;

size_t window_for(size_t segment_bytes) {
  return std::clamp<size_t>(kStagingBudget / std::max<size_t>(segment_bytes, 1), 2, kWindow);
}

size_t largest_chunk(const Split& chunks, int parts) {
  size_t largest = 0;
  for (int part = 0; part < parts; ++part)
    largest = std::max(largest, chunks.size(static_cast<size_t>(part)));
  return largest;
}

bool may_spin(int ranks) {
  static const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(ranks) <= cpus;
}

struct Item {
  int step = 0;
  size_t segment = 0;
};

class RingRun {
 public:
  RingRun(Context& ctx, const Split& chunks, const RingPlan& plan, const RingBuffers& buffers,
          DataType type, ReduceOp op, std::string_view what)
      : ctx_(ctx),
        chunks_(chunks),
        plan_(plan),
        buffers_(buffers),
        type_(type),
        op_(op),
        what_(what),
        element_bytes_(element_size(type)),
        per_segment_(segment_elements(
            ring_segment_bytes(ctx, largest_chunk(chunks, ctx.size) * element_bytes_),
            element_bytes_)),
        window_(window_for(per_segment_ * element_bytes_)),
        steps_(plan.reduce_steps + plan.gather_steps),
        next_(&ctx.transport.channel(wrap(ctx.rank + 1, ctx.size))),
        prev_(&ctx.transport.channel(wrap(ctx.rank - 1, ctx.size))),
        spin_(may_spin(ctx.size)) {
    if (plan_.reduce_steps > 0) {
      staging_ = ctx.scratch.get(kStagingSlot, window_ * per_segment_ * element_bytes_).data();
    }
  }

  void run() {
    send_first_chunk(std::min(window_, kFirstSends));
    Item post = first_item({0, 0});
    std::array<transport::Request, kWindow> pending;
    std::array<Item, kWindow> pending_items;
    size_t posted = 0;
    size_t processed = 0;
    auto post_more = [&] {
      while (post.step < steps_ && posted - processed < window_) {
        pending_items[posted % window_] = post;
        pending[posted % window_] = post_receive(post, posted % window_);
        ++posted;
        post = first_item({post.step, post.segment + 1});
      }
    };
    post_more();
    while (processed < posted) {
      const size_t slot = processed % window_;
      await(pending[slot]);
      const Item item = pending_items[slot];
      // The receive of the following segments is already posted; reduce this one meanwhile.
      finish(item, slot);
      ++processed;
      // Step 0's sends are paced by step 0's receives (see send_first_chunk).
      send_first_chunk(item.step == 0 ? item.segment + 1 + window_ : kAll);
      post_more();
    }
    send_first_chunk(kAll);
    ctx_.transport.wait(sends_, ctx_.deadline, what_);
  }

 private:
  int send_chunk(int step) const { return wrap(plan_.first_chunk - step, ctx_.size); }
  int recv_chunk(int step) const { return wrap(plan_.first_chunk - step - 1, ctx_.size); }
  size_t chunk_segments(int chunk) const {
    return segment_count(chunks_.size(chunk), per_segment_);
  }
  size_t segment_begin(size_t segment) const { return segment * per_segment_; }
  size_t segment_size(int chunk, size_t segment) const {
    return std::min(per_segment_, chunks_.size(chunk) - segment * per_segment_);
  }
  size_t chunk_offset_bytes(int chunk) const { return chunks_.begin(chunk) * element_bytes_; }

  transport::Tag tag(int step) const {
    return transport::make_tag(ctx_.sequence, plan_.tag_base + static_cast<uint32_t>(step));
  }

  // The first item at or after `from`, skipping steps whose chunk is empty.
  Item first_item(Item from) const {
    while (from.step < steps_ && from.segment >= chunk_segments(recv_chunk(from.step))) {
      from = {from.step + 1, 0};
    }
    return from;
  }

  bool is_reduce_step(int step) const { return step < plan_.reduce_steps; }

  // Where the result of receiving `chunk` at `step` lives: reduce steps other than the last keep a
  // partial sum, the last reduce step and every gather step hold final data.
  std::byte* destination(int step, int chunk) const {
    if (is_reduce_step(step) && step + 1 < plan_.reduce_steps) {
      return buffers_.partial + chunk_offset_bytes(chunk);
    }
    return buffers_.output_is_one_chunk ? buffers_.output
                                        : buffers_.output + chunk_offset_bytes(chunk);
  }

  static constexpr size_t kAll = ~size_t{0};

  // Sends the first chunk's segments up to (not including) `until`. The next rank posts only
  // window_ receives ahead, and none before it starts the call, so a segment sent early lands in
  // its channel's unexpected stash: one more copy per segment. Pacing step 0 by this rank's own
  // step 0 receives keeps the ring in step without any extra message: every rank sends its first
  // kFirstSends segments unconditionally, so each later one only waits on earlier ones.
  void send_first_chunk(size_t until) {
    const int chunk = send_chunk(0);
    const size_t end = std::min(until, chunk_segments(chunk));
    for (; first_sent_ < end; ++first_sent_) {
      const size_t elements = segment_size(chunk, first_sent_);
      if (buffers_.tensors) {
        sends_.push_back(next_->isend_pieces(
            tag(0), tensor_pieces<const std::byte>(
                        Side::kSend, chunks_.begin(chunk) + segment_begin(first_sent_), elements)));
        continue;
      }
      const std::byte* data = buffers_.first_send + segment_begin(first_sent_) * element_bytes_;
      sends_.push_back(next_->isend(tag(0), {data, elements * element_bytes_}));
    }
  }

  enum class Side { kSend, kRecv };
  // The tensors' send or recv side of elements [first, first + n) of this ring's data, as pieces
  // (Byte = const std::byte to send them, std::byte to receive into the recv side).
  template <typename Byte>
  std::vector<std::span<Byte>> tensor_pieces(Side side, size_t first, size_t n) const {
    std::vector<std::span<Byte>> out;
    buffers_.tensors->pieces(buffers_.tensors_offset + first, n,
                             [&](const std::byte* in, std::byte* o, size_t, size_t len) {
                               if constexpr (std::is_const_v<Byte>)
                                 out.emplace_back(side == Side::kSend ? in : o,
                                                  len * element_bytes_);
                               else
                                 out.emplace_back(o, len * element_bytes_);
                             });
    return out;
  }

  // Whether step's received chunk ends in `partial` (reduce steps other than the last).
  bool to_partial(int step) const { return is_reduce_step(step) && step + 1 < plan_.reduce_steps; }

  // Waits for one receive: polls the channels for up to kSpinBudget first (see there).
  void await(const transport::Request& request) {
    if (spin_ && !request.complete()) {
      const auto until = std::chrono::steady_clock::now() + kSpinBudget;
      do {
        if (ctx_.transport.progress_all()) continue;
        if (std::chrono::steady_clock::now() > until) break;
        // Free on an idle CPU; on a busy one it lets whoever is runnable (the peer) go first.
        sched_yield();
      } while (!request.complete());
    }
    ctx_.transport.wait(std::span(&request, 1), ctx_.deadline, what_);
  }

  transport::Request post_receive(const Item& item, size_t slot) {
    const int chunk = recv_chunk(item.step);
    const size_t bytes = segment_size(chunk, item.segment) * element_bytes_;
    if (buffers_.tensors && !is_reduce_step(item.step))
      return prev_->irecv_pieces(
          tag(item.step),
          tensor_pieces<std::byte>(Side::kRecv, chunks_.begin(chunk) + segment_begin(item.segment),
                                   segment_size(chunk, item.segment)));
    std::byte* into = is_reduce_step(item.step) ? staging_ + slot * per_segment_ * element_bytes_
                                                : destination(item.step, chunk) +
                                                      segment_begin(item.segment) * element_bytes_;
    return prev_->irecv(tag(item.step), {into, bytes});
  }

  // result = own (op) incoming, over `elements`, for a segment received at `step`.
  void combine(int step, std::byte* result, const std::byte* own, const std::byte* incoming,
               size_t elements) const {
    if (ctx_.scaled()) {
      // Step 0 brings the previous rank's raw input, later steps partial (scaled) sums; the
      // last reduce step's result is final.
      reduce::combine_scaled(type_, result, own, ctx_.prescale, incoming,
                             step == 0 ? ctx_.prescale : 1.0,
                             step + 1 == plan_.reduce_steps ? ctx_.postscale : 1.0, elements);
    } else {
      reduce::combine(type_, op_, result, own, incoming, elements);
    }
  }

  void finish(const Item& item, size_t slot) {
    const int chunk = recv_chunk(item.step);
    const size_t elements = segment_size(chunk, item.segment);
    const size_t offset = segment_begin(item.segment) * element_bytes_;
    const bool forward = item.step + 1 < steps_;
    if (forward && sends_.size() >= kPruneSends)
      std::erase_if(sends_, [](auto& r) { return r.complete(); });
    if (buffers_.tensors) {
      // Partial sums, final sums and gathered results all land in the tensors' recv sides (a
      // chunk passes each rank once per phase, so a partial sum never overwrites an input still
      // to be read, in place or not), and leave from there.
      const size_t first = chunks_.begin(chunk) + segment_begin(item.segment);
      if (is_reduce_step(item.step)) {
        const std::byte* incoming = staging_ + slot * per_segment_ * element_bytes_;
        buffers_.tensors->pieces(buffers_.tensors_offset + first, elements,
                                 [&](const std::byte* in, std::byte* out, size_t at, size_t n) {
                                   combine(item.step, out, in, incoming + at * element_bytes_, n);
                                 });
      }
      if (!forward) return;
      sends_.push_back(next_->isend_pieces(
          tag(item.step + 1), tensor_pieces<const std::byte>(Side::kRecv, first, elements)));
      return;
    }
    std::byte* result = destination(item.step, chunk) + offset;
    if (is_reduce_step(item.step)) {
      const std::byte* own = buffers_.input + chunk_offset_bytes(chunk) + offset;
      combine(item.step, result, own, staging_ + slot * per_segment_ * element_bytes_, elements);
    }
    if (forward)
      sends_.push_back(next_->isend(tag(item.step + 1), {result, elements * element_bytes_}));
  }

  Context& ctx_;
  const Split& chunks_;
  const RingPlan& plan_;
  const RingBuffers& buffers_;
  DataType type_;
  ReduceOp op_;
  std::string_view what_;
  size_t element_bytes_;
  size_t per_segment_;
  size_t window_;  // receives posted ahead: kWindow, fewer for large segments (window_for)
  int steps_;
  transport::Channel* next_;
  transport::Channel* prev_;
  bool spin_;
  size_t first_sent_ = 0;  // segments of step 0's chunk handed to next_
  std::byte* staging_ = nullptr;
  std::vector<transport::Request> sends_;
};

}  // namespace

void run_ring(Context& ctx, const Split& chunks, const RingPlan& plan, const RingBuffers& buffers,
              DataType type, ReduceOp op, std::string_view what) {
  if (ctx.size <= 1 || plan.reduce_steps + plan.gather_steps == 0) return;
  RingRun(ctx, chunks, plan, buffers, type, op, what).run();
}

}  // namespace tutti::collectives
