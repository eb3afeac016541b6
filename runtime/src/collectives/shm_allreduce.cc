// Allreduce through the transport's LocalWindow (all ranks on one host).
//
// Large messages, per chunk: every rank copies its input (all but its own slice) into its window
// area; then reduces its own slice straight from its own input plus the others' staged copies in
// one pass, storing the result both to its output and to its area; then copies every other
// slice's result from its owner's area to its output. Each byte crosses between ranks once in each
// direction and nobody reduces more than its share. The three stages overlap across chunks, with
// per-chunk counters: each rank moves whichever chunk it can, so one that is ahead keeps working
// instead of waiting.
//
// Small messages take one step: everyone stages everything, then everyone reduces everything
// itself, one flag round instead of three.
//
// Every rank reduces in rank order, so all ranks get the same bits.
//
// Writes into the window, and out of place into the output, use cached or streaming stores as
// ShmStoreTuner decides per size class from this rank's own call times (TUTTI_SHM_STORES forces
// one).
#include <sched.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <memory>

#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/segments.hpp"
#include "collectives/settings.hpp"
#include "collectives/shm_plan.hpp"
#include "collectives/shm_store_tuner.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "reduce/reduce.hpp"
#include "reduce/stream_stores.hpp"
#include "transport/local_window.hpp"

namespace tutti::collectives {
namespace {

// The window counters this algorithm keeps; each counts chunks since the communicator started.
enum Counter : int {
  kStaged = 0,   // chunks whose input this rank has staged
  kReduced = 1,  // chunks whose slice this rank has reduced into its area
  kDone = 2,     // chunks this rank has finished reading from the others' areas
};

// What the algorithm keeps across calls on one window.
struct ShmState {
  ShmStoreTuner tuner;
  std::vector<const void*> sources;  // reused per reduce, one per rank
  // Per window slot, the kDone count at which every peer has read the slot's last occupant, so
  // the slot may be written again (0: never used). Slots are assigned the same way on every rank.
  std::vector<uint64_t> slot_release;
};

ShmState& state_of(transport::LocalWindow& window, const Settings& settings) {
  auto& slot = window.collective_state();
  if (!slot) {
    const std::string& m = settings.options.shm_stores;
    const auto mode = m == "cached"      ? ShmStoreTuner::Mode::kCached
                      : m == "streaming" ? ShmStoreTuner::Mode::kStreaming
                                         : ShmStoreTuner::Mode::kAuto;
    auto state = std::make_shared<ShmState>(ShmState{ShmStoreTuner(mode), {}, {}});
    state->sources.resize(static_cast<size_t>(window.size()));
    // Slot sizes do not depend on the element size (plan_shm), so neither does their number.
    state->slot_release.resize(plan_shm(window.area_bytes(), window.size(), 1).slots);
    slot = state;
  }
  return *static_cast<ShmState*>(slot.get());
}

class ShmAllreduce {
 public:
  ShmAllreduce(Context& ctx, transport::LocalWindow& window, ShmState& state, const SegmentView& io,
               DataType type, ReduceOp op, ShmStores stores)
      : ctx_(ctx),
        w_(window),
        plan_(plan_shm(window.area_bytes(), window.size(), element_size(type))),
        io_(io),
        count_(io.count()),
        type_(type),
        op_(op),
        stores_(stores),
        state_(state),
        sources_(state.sources),
        // Every rank completed the same chunks before this call.
        first_(window.own_flag(kDone)),
        fingerprint_(ctx.transport.current_call().fingerprint()) {}

  void run() {
    if (count_ <= plan_.single_step_elements) {
      single_step();
      return;
    }
    pipelined();
    // Streaming stores into the output are weakly ordered: order them before whatever the caller
    // does next (handing the buffer to another thread).
    if (stores_.output == reduce::CopyStores::kStreaming) reduce::store_fence();
  }

 private:
  void pipelined() {
    // Greedy: finish the oldest chunk whose inputs are there (copy out, else reduce), else stage
    // the next one while a slot is free. A rank whose peers are off the CPU (4 ranks on 2 vCPUs,
    // or other jobs) does all the work it can before waiting, so when they run again they find
    // up to a window of chunks ready instead of one.
    const size_t chunks = (count_ + plan_.chunk_elements - 1) / plan_.chunk_elements;
    size_t staged = 0, reduced = 0, copied = 0;
    while (copied < chunks) {
      if (copied < reduced && w_.peers_reached(kReduced, chunk_id(copied) + 1)) {
        copy_out(copied++);
      } else if (reduced < staged && w_.peers_reached(kStaged, chunk_id(reduced) + 1)) {
        reduce_own_slice(reduced++);
      } else if (staged < chunks && slot_free(staged)) {
        stage(staged++);
      } else if (copied < reduced) {
        copy_out(copied++);  // nothing else can move: wait for the oldest step outstanding
      } else if (reduced < staged) {
        reduce_own_slice(reduced++);
      } else {
        stage(staged++);
      }
    }
  }

  size_t es() const { return plan_.element_bytes; }
  uint64_t chunk_id(size_t j) const { return first_ + j; }
  // Single-step calls rotate through the slots by chunk counter; chunk j of a pipelined call
  // takes slot j % slots, so a message that fits the window finds its slots still in cache from
  // the last call instead of cycling through the whole window.
  size_t slot_index(uint64_t index) const { return index % plan_.slots; }
  std::byte* slot(int rank, uint64_t index) const {
    return w_.area(rank) + slot_index(index) * plan_.slot_bytes;
  }
  size_t chunk_offset(size_t j) const { return j * plan_.chunk_elements; }
  size_t chunk_size(size_t j) const {
    return std::min(plan_.chunk_elements, count_ - chunk_offset(j));
  }
  Slice slice(size_t n, int rank) const { return slice_of(n, w_.size(), rank, es()); }

  // Before overwriting a slot, every peer must have read the chunk that used it last (tracked
  // per slot, so a call waits only for that chunk, never for the whole previous call).
  bool slot_free(uint64_t index) {
    return w_.peers_reached(kDone, state_.slot_release[slot_index(index)]);
  }
  void claim_slot(uint64_t index, uint64_t g) {
    uint64_t& release = state_.slot_release[slot_index(index)];
    w_.wait_peers(kDone, release, ctx_.deadline,
                  "the shm allreduce (peers still reading the window slot this rank reuses)");
    release = g + 1;
  }

  // The call's fingerprint rides with its first chunk, in the word after bank g % 2 of the kStaged
  // line (freed by the same argument as the inline bytes below: a peer cannot start another call
  // until this rank has staged in a later one). A peer that saw every kStaged reach the first chunk
  // compares them all: a rank in another call (count, type, op, or a call it skipped) is a
  // mismatch, not a wrong sum.
  void post_fingerprint() {
    const uint64_t g = chunk_id(0);
    w_.inline_word(w_.rank(), kStaged, static_cast<int>(g % 2)) = fingerprint_;
  }
  void check_fingerprints() {
    const int bank = static_cast<int>(chunk_id(0) % 2);
    for (int r = 0; r < w_.size(); ++r) {
      if (r == w_.rank()) continue;
      const uint64_t theirs = std::atomic_ref<uint64_t>(w_.inline_word(r, kStaged, bank))
                                  .load(std::memory_order_relaxed);
      if (theirs != fingerprint_) fail_mismatch(r);
    }
  }
  [[noreturn]] void fail_mismatch(int peer) {
    // The fingerprint only says that the calls differ. For the message, give the peer a moment
    // to post its full call in the window (it finds the mismatch too, or stalls, and both post).
    const Deadline budget = Deadline::after(std::chrono::milliseconds(200));
    do {
      ctx_.transport.check_call_agreement();  // throws naming both calls once the peer's is there
      sched_yield();
    } while (!budget.expired());
    const transport::CallSignature& mine = ctx_.transport.current_call();
    throw make_error(
        ErrorCode::kMismatch,
        "collective mismatch: rank {} is not in {} as this rank {} is (it passed another count, "
        "dtype or op, or made a different number of calls). Every rank must make the same "
        "collective calls in the same order with the same count, dtype, op and root",
        peer, mine.describe(), ctx_.rank);
  }

  // Up to LocalWindow::kInlineBytes the input rides in the kStaged counter's cache line, in bank
  // g % 2. A bank is free again when every peer has read it: a peer stages chunk g - 1 only after
  // finishing chunk g - 2, and this rank saw every peer's kStaged reach g before starting chunk g.
  void inline_step() {
    const uint64_t g = chunk_id(0);
    const int bank = static_cast<int>(g % 2);
    gather(w_.inline_bytes(w_.rank(), kStaged, bank));
    post_fingerprint();
    w_.publish(kStaged, g + 1);
    w_.wait_peers(kStaged, g + 1, ctx_.deadline, "the shm allreduce (peers staging their input)");
    check_fingerprints();
    reduce_all([&](int r) { return w_.inline_bytes(r, kStaged, bank); });
    w_.publish(kDone, g + 1);
  }

  void single_step() {
    const uint64_t g = chunk_id(0);
    if (count_ * es() <= transport::LocalWindow::kInlineBytes) {
      inline_step();
      return;
    }
    claim_slot(g, g);
    gather(slot(w_.rank(), g));
    post_fingerprint();
    w_.publish(kStaged, g + 1);
    w_.wait_peers(kStaged, g + 1, ctx_.deadline, "the shm allreduce (peers staging their input)");
    check_fingerprints();
    reduce_all([&](int r) { return slot(r, g); });
    w_.publish(kDone, g + 1);
  }

  // The whole input, packed at `to` (single-step calls).
  void gather(std::byte* to) const {
    io_.pieces(0, count_, [&](const std::byte* in, std::byte*, size_t at, size_t n) {
      std::memcpy(to + at * es(), in, n * es());
    });
  }
  // Every element, reduced from this rank's input and each peer's staged copy at staged(r).
  // Own data comes straight from the input: reduce_many reads every source's block before
  // storing it.
  template <typename Staged>
  void reduce_all(Staged&& staged) {
    io_.pieces(0, count_, [&](const std::byte* in, std::byte* out, size_t at, size_t n) {
      for (int r = 0; r < w_.size(); ++r)
        sources_[static_cast<size_t>(r)] = r == w_.rank() ? in : staged(r) + at * es();
      reduce_sources(out, nullptr, n, {});
    });
  }

  // out = op over sources_ (raw inputs of every rank): prescaled as read, postscaled as stored.
  void reduce_sources(std::byte* out, std::byte* copy, size_t n, ShmStores stores) {
    if (ctx_.scaled()) {
      reduce::reduce_many_scaled(type_, out, copy, sources_, n, ctx_.prescale, ctx_.postscale,
                                 stores.window, stores.output);
    } else {
      reduce::reduce_many(type_, op_, out, copy, sources_, n, stores.window, stores.output);
    }
  }

  void stage(size_t j) {
    const uint64_t g = chunk_id(j);
    const size_t off = chunk_offset(j), n = chunk_size(j);
    const Slice own = slice(n, w_.rank());
    claim_slot(j, g);
    std::byte* area = slot(w_.rank(), j);
    // Nobody reads this rank's copy of its own slice.
    const size_t after = own.first + own.count;
    const auto copy_in = [&](size_t first, size_t count) {
      io_.pieces(off + first, count, [&](const std::byte* in, std::byte*, size_t at, size_t len) {
        std::byte* to = area + (first + at) * es();
        if (stores_.window == reduce::CopyStores::kStreaming)
          reduce::stream_copy(to, in, len * es());
        else
          std::memcpy(to, in, len * es());
      });
    };
    copy_in(0, own.first);
    copy_in(after, n - after);
    if (j == 0) post_fingerprint();
    w_.publish(kStaged, g + 1);
  }

  void reduce_own_slice(size_t j) {
    const uint64_t g = chunk_id(j);
    const size_t off = chunk_offset(j), n = chunk_size(j);
    const Slice own = slice(n, w_.rank());
    w_.wait_peers(kStaged, g + 1, ctx_.deadline, "the shm allreduce (peers staging a chunk)");
    if (j == 0) check_fingerprints();
    // In place the output slice is also this rank's source; reduce_many reads each block of
    // every source before it stores that block.
    io_.pieces(off + own.first, own.count,
               [&](const std::byte* in, std::byte* out, size_t at, size_t len) {
                 const size_t from = (own.first + at) * es();
                 for (int r = 0; r < w_.size(); ++r)
                   sources_[static_cast<size_t>(r)] = r == w_.rank() ? in : slot(r, j) + from;
                 reduce_sources(out, slot(w_.rank(), j) + from, len, stores_);
               });
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
      const std::byte* from = slot(r, j) + s.first * es();
      io_.pieces(off + s.first, s.count,
                 [&](const std::byte*, std::byte* out, size_t at, size_t len) {
                   if (stores_.output == reduce::CopyStores::kStreaming)
                     reduce::stream_copy_unfenced(out, from + at * es(), len * es());
                   else
                     std::memcpy(out, from + at * es(), len * es());
                 });
    }
    w_.publish(kDone, g + 1);
  }

  Context& ctx_;
  transport::LocalWindow& w_;
  const ShmPlan plan_;
  const SegmentView& io_;
  const size_t count_;
  const DataType type_;
  const ReduceOp op_;
  const ShmStores stores_;
  ShmState& state_;
  std::vector<const void*>& sources_;
  const uint64_t first_;
  const uint64_t fingerprint_;
};

const char* stores_name(reduce::CopyStores stores) {
  return stores == reduce::CopyStores::kStreaming ? "streaming" : "cached";
}

// Rank 0 publishes the time of each tuned call for every rank's ShmStoreTuner, in its kDone
// line's bank `call % 2` (bytes: the call and the combination; word: the nanoseconds). Tuned call
// t's bank is read at the start of tuned call t + 2 and written again at the end of t + 2: every
// rank read it before staging t + 2, and rank 0 ends t + 2 only after every rank staged it. It
// was written before rank 0 staged t + 1, which every rank waited for.
void publish_rank0_time(transport::LocalWindow& w, const ShmChoice& choice, double ns) {
  const int bank = static_cast<int>(choice.call % 2);
  auto* words = reinterpret_cast<uint64_t*>(w.inline_bytes(0, kDone, bank));
  const uint64_t arm = (choice.stores.window == reduce::CopyStores::kStreaming ? 1u : 0u) |
                       (choice.stores.output == reduce::CopyStores::kStreaming ? 2u : 0u);
  std::atomic_ref<uint64_t>(words[0]).store(choice.call, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(words[1]).store(arm, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(w.inline_word(0, kDone, bank))
      .store(std::bit_cast<uint64_t>(ns), std::memory_order_relaxed);
}

void learn_rank0_time(transport::LocalWindow& w, uint64_t call, ShmStoreTuner& tuner) {
  const int bank = static_cast<int>(call % 2);
  auto* words = reinterpret_cast<uint64_t*>(w.inline_bytes(0, kDone, bank));
  if (std::atomic_ref<uint64_t>(words[0]).load(std::memory_order_relaxed) != call) return;
  const uint64_t arm = std::atomic_ref<uint64_t>(words[1]).load(std::memory_order_relaxed);
  const double ns = std::bit_cast<double>(
      std::atomic_ref<uint64_t>(w.inline_word(0, kDone, bank)).load(std::memory_order_relaxed));
  const ShmStores used{
      (arm & 1) != 0 ? reduce::CopyStores::kStreaming : reduce::CopyStores::kCached,
      (arm & 2) != 0 ? reduce::CopyStores::kStreaming : reduce::CopyStores::kCached};
  tuner.learn(call, used, ns);
}

}  // namespace

void shm_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                   ReduceOp op) {
  const Segment one{send, recv, count};
  shm_allreduce_segments(ctx, std::span<const Segment>(&one, 1), type, op);
}

void shm_allreduce_segments(Context& ctx, std::span<const Segment> segments, DataType type,
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
  const SegmentView io(segments, element_size(type));
  if (io.count() == 0) return;
  if (ctx.size == 1) {
    for (const Segment& s : segments)
      copy_unless_same(s.send, s.recv, s.count * element_size(type));
    return;
  }
  ShmState& state = state_of(*window, settings_of(ctx));
  const size_t bytes = io.count() * element_size(type);
  bool in_place = true;
  for (const Segment& s : segments) in_place = in_place && s.send == s.recv;
  if (const uint64_t due = state.tuner.time_due(bytes)) learn_rank0_time(*window, due, state.tuner);
  const ShmChoice choice = state.tuner.choose(bytes, in_place);
  if (choice.call != 0 && log::enabled(log::Level::kTrace))
    log::trace("shm allreduce, tuned call {} ({} bytes, {}): window {}, output {}", choice.call,
               bytes, in_place ? "in place" : "out of place", stores_name(choice.stores.window),
               stores_name(choice.stores.output));
  if (choice.call == 0 || window->rank() != 0) {
    ShmAllreduce(ctx, *window, state, io, type, op, choice.stores).run();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  ShmAllreduce(ctx, *window, state, io, type, op, choice.stores).run();
  publish_rank0_time(
      *window, choice,
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace tutti::collectives
