// Recursive halving reduce-scatter then recursive doubling allgather (Rabenseifner), for small and
// medium messages: 2 log2(p) rounds instead of the ring's 2 (size-1). Below the size where the
// cost model says whole vectors are cheaper than halves (recursive_doubling_pays), each round
// instead exchanges the whole vector with the partner and both reduce it: log2(p) rounds, half the
// latency, which is what a few bytes pay for. Both partners combine the same two values with a
// commutative op, so every rank ends with the same bits.
//
// With size = p + extra (p the largest power of two <= size), the first 2*extra ranks fold in
// pairs: each even one sends its data to the odd one above it, sits out, and receives the final
// result at the end. The remaining p ranks take virtual ranks 0..p-1 and run the power-of-two
// algorithm on p blocks.
//
// From kHdNearestFirstBytes up the halving goes nearest partner first (virtual_rank ^ 1, then ^ 2,
// ...), so its largest exchange (half the vector) is between neighbouring ranks, which a launcher
// puts on one host: with 2 ranks per host the half crosses shared memory and only the quarters
// cross the network, half the network bytes of going farthest first. Smaller vectors go farthest
// first (kHdNearestFirstBytes says why). The doubling retraces the halving's rounds backwards.
// The cost model still prices every round on the flat link: pricing the rounds that stay on a
// host on shared memory made it pick hd at 64 MiB between pods, where hd took 1.4-2.1x the
// fastest (docs/PERFORMANCE.md, "Scale across pods, second pass").
#include <algorithm>
#include <array>
#include <bit>
#include <span>

#include "collectives/checks.hpp"
#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"
#include "collectives/placement.hpp"
#include "collectives/scratch_slots.hpp"
#include "reduce/reduce.hpp"

namespace tutti::collectives {
namespace {

constexpr std::string_view kWhat = "halving-doubling allreduce";

// From this size up the halving goes nearest partner first. Between pods of one 2-vCPU machine,
// 2 ranks a pod, nearest first measured 1.4-2.4x faster at 1 MiB (4 and 8 ranks), alike at
// 64 KiB, and 3-7x slower at 8 B: there the ranks whose last round is on shared memory poll it (no
// fd to sleep on) through the network rounds, on the CPUs the network rounds need.
constexpr size_t kHdNearestFirstBytes = 256 << 10;

class HalvingDoubling {
 public:
  HalvingDoubling(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                  ReduceOp op, bool whole_vectors)
      : ctx_(ctx),
        send_(bytes_of(send)),
        recv_(bytes_of(recv)),
        count_(count),
        type_(type),
        op_(op),
        element_bytes_(element_size(type)),
        pow2_(static_cast<int>(std::bit_floor(static_cast<unsigned>(ctx.size)))),
        extra_(ctx.size - pow2_),
        rounds_(std::countr_zero(static_cast<unsigned>(pow2_))),
        blocks_(count, static_cast<size_t>(pow2_)),
        whole_vectors_(whole_vectors),
        nearest_first_(count * element_bytes_ >= kHdNearestFirstBytes) {
    staging_ = ctx.scratch.get(kStagingSlot, count * element_bytes_).data();
  }

  void run() {
    const int rank = ctx_.rank;
    const std::byte* source = send_;  // where this rank's not yet reduced data lives
    bool source_raw = true;           // still this rank's input (send_ may be recv_: in place)
    if (rank < 2 * extra_) {
      if (rank % 2 == 0) {
        sit_out();
        return;
      }
      exchange(rank - 1, kFoldStep, {}, {staging_, bytes(count_)});
      combine(recv_, send_, true, staging_, true, false, count_);
      source = recv_;
      source_raw = false;
    }
    const int virtual_rank = rank < 2 * extra_ ? rank / 2 : rank - extra_;
    if (whole_vectors_) {
      recursive_doubling(virtual_rank, source, source_raw);
      if (rank < 2 * extra_) exchange(rank - 1, final_step(), {recv_, bytes(count_)}, {});
      return;
    }
    size_t lo = 0;
    size_t hi = static_cast<size_t>(pow2_);
    int step = kFoldStep + 1;
    for (int round = 0; round < rounds_; ++round, ++step) {
      const int mask = partner_bit(round);
      const size_t mid = (lo + hi) / 2;
      const bool upper = (virtual_rank & mask) != 0;
      const size_t keep_lo = upper ? mid : lo;
      const size_t keep_hi = upper ? hi : mid;
      const size_t give_lo = upper ? lo : mid;
      const size_t give_hi = upper ? mid : hi;
      const size_t keep = elements(keep_lo, keep_hi);
      exchange(real_rank(virtual_rank ^ mask), step,
               {source + offset(give_lo), bytes(elements(give_lo, give_hi))},
               {staging_, bytes(keep)});
      // The peer's half is its raw input only in the first round and only if it did not fold.
      const int peer = real_rank(virtual_rank ^ mask);
      const bool peer_raw = round == 0 && peer >= 2 * extra_;
      combine(recv_ + offset(keep_lo), source + offset(keep_lo), source_raw, staging_, peer_raw,
              round + 1 == rounds_, keep);
      // Only [keep_lo, keep_hi) is read from now on, and it is reduced in recv.
      source = recv_;
      source_raw = false;
      lo = keep_lo;
      hi = keep_hi;
    }
    for (int round = rounds_ - 1; round >= 0; --round, ++step) {
      const int mask = partner_bit(round);
      const size_t width = hi - lo;
      const bool upper = (virtual_rank & mask) != 0;
      const size_t other_lo = upper ? lo - width : hi;
      const size_t other_hi = upper ? lo : hi + width;
      exchange(real_rank(virtual_rank ^ mask), step, {recv_ + offset(lo), bytes(elements(lo, hi))},
               {recv_ + offset(other_lo), bytes(elements(other_lo, other_hi))});
      lo = std::min(lo, other_lo);
      hi = std::max(hi, other_hi);
    }
    if (rank < 2 * extra_) exchange(rank - 1, final_step(), {recv_, bytes(count_)}, {});
  }

 private:
  // log2(p) rounds: exchange the whole vector with virtual_rank ^ mask and reduce it.
  void recursive_doubling(int virtual_rank, const std::byte* source, bool source_raw) {
    int step = kFoldStep + 1;
    for (int mask = 1; mask < pow2_; mask *= 2, ++step) {
      const int peer = real_rank(virtual_rank ^ mask);
      exchange(peer, step, {source, bytes(count_)}, {staging_, bytes(count_)});
      // The peer's vector is its raw input only in the first round and only if it did not fold.
      const bool peer_raw = mask == 1 && peer >= 2 * extra_;
      combine(recv_, source, source_raw, staging_, peer_raw, 2 * mask == pow2_, count_);
      source = recv_;
      source_raw = false;
    }
  }

  // The bit of the virtual rank that names the halving's partner in `round`.
  int partner_bit(int round) const { return nearest_first_ ? 1 << round : (pow2_ / 2) >> round; }

  static constexpr int kFoldStep = 0;
  int final_step() const { return kFoldStep + 1 + 2 * rounds_; }

  int real_rank(int virtual_rank) const {
    return virtual_rank < extra_ ? 2 * virtual_rank + 1 : virtual_rank + extra_;
  }
  size_t elements(size_t block_lo, size_t block_hi) const {
    return blocks_.begin(block_hi) - blocks_.begin(block_lo);
  }
  size_t offset(size_t block) const { return blocks_.begin(block) * element_bytes_; }
  size_t bytes(size_t elements) const { return elements * element_bytes_; }

  // dst = a op b; with prescale/postscale, raw inputs are prescaled and the last round's result
  // postscaled inside the same loop.
  void combine(std::byte* dst, const std::byte* a, bool a_raw, const std::byte* b, bool b_raw,
               bool last, size_t n) {
    if (!ctx_.scaled()) {
      reduce::combine(type_, op_, dst, a, b, n);
      return;
    }
    reduce::combine_scaled(type_, dst, a, a_raw ? ctx_.prescale : 1.0, b,
                           b_raw ? ctx_.prescale : 1.0, last ? ctx_.postscale : 1.0, n);
  }

  void sit_out() {
    exchange(ctx_.rank + 1, kFoldStep, {send_, bytes(count_)}, {});
    exchange(ctx_.rank + 1, final_step(), {}, {recv_, bytes(count_)});
  }

  // Sends `out` and receives `in` from `peer` at once; an empty side is skipped, as the peer
  // computes the same empty size for it.
  void exchange(int peer, int step, std::span<const std::byte> out, std::span<std::byte> in) {
    auto& channel = ctx_.transport.channel(peer);
    const auto tag = transport::make_tag(ctx_.sequence, static_cast<uint32_t>(step));
    std::array<transport::Request, 2> requests;
    if (!in.empty()) requests[0] = channel.irecv(tag, in);
    if (!out.empty()) requests[1] = channel.isend(tag, out);
    ctx_.transport.wait(requests, ctx_.deadline, kWhat);
  }

  Context& ctx_;
  const std::byte* send_;
  std::byte* recv_;
  size_t count_;
  DataType type_;
  ReduceOp op_;
  size_t element_bytes_;
  int pow2_;
  int extra_;
  int rounds_;
  Split blocks_;
  bool whole_vectors_;  // recursive doubling instead of halving then doubling
  bool nearest_first_;  // the halving's partners nearest first (kHdNearestFirstBytes)
  std::byte* staging_ = nullptr;
};

}  // namespace

void halving_doubling_allreduce(Context& ctx, const void* send, void* recv, size_t count,
                                DataType type, ReduceOp op) {
  check_buffers(ctx, kWhat, send, recv, count, type);
  check_op(ctx, kWhat, op, type);
  if (count == 0) return;
  if (ctx.size == 1) {
    copy_unless_same(send, recv, count * element_size(type));
    return;
  }
  const bool whole_vectors = recursive_doubling_pays(ctx, count, element_size(type));
  HalvingDoubling(ctx, send, recv, count, type, op, whole_vectors).run();
}

}  // namespace tutti::collectives
