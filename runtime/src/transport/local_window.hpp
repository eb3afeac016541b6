// LocalWindow: memory that every rank of the world has mapped (all ranks share one host), for
// collectives that read each other's data directly instead of sending it. Each rank owns one area
// (only it writes there unless an algorithm says otherwise) and kFlags sequence counters that only
// it stores and everyone may wait on. Collectives see only this interface, never the segment.
//
// Waiting spins briefly (only where every rank has a CPU of its own; with more ranks than CPUs a
// spinning waiter steals the CPU from the rank it waits for), then yields. The spin budget adapts:
// it halves after a wait that spinning did not end (the peer was not running: other jobs load
// the CPUs, or it has long work left) and doubles back after one it did. After a second without
// progress it naps in short sleeps so a stalled job stops burning CPU. Every few hundred rounds it
// progresses the transport's channels (abort notices) and checks that the awaited ranks are alive,
// and it always honours the deadline.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/deadline.hpp"
#include "transport/call_signature.hpp"

namespace tutti::transport {

class Transport;

class LocalWindow {
 public:
  // Counters 0..kFlags-1 are the collectives'; the window keeps one more line per rank for the
  // call that rank is in (announce / find_disagreement).
  static constexpr int kFlags = 3;

  // Bytes of shared memory a window of `size` ranks with `area_bytes` per rank occupies.
  static size_t footprint(int size, size_t area_bytes);

  // memory: footprint(size, area_bytes) zeroed bytes (page-aligned) mapped by every rank;
  // `mapping` keeps them mapped. spin_rounds: busy-wait rounds before yielding.
  LocalWindow(Transport& transport, std::byte* memory, size_t area_bytes,
              std::shared_ptr<void> mapping, int spin_rounds);
  LocalWindow(const LocalWindow&) = delete;
  LocalWindow& operator=(const LocalWindow&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The configured most busy-wait rounds of one wait (the adaptive budget never exceeds it).
  int spin_rounds() const { return spin_rounds_; }
  size_t area_bytes() const { return area_bytes_; }
  // `rank`'s area: area_bytes(), page-aligned.
  std::byte* area(int rank) const { return areas_ + static_cast<size_t>(rank) * area_stride_; }

  // Bytes a rank may attach to its counter `index`, in the counter's own cache line, in two banks
  // that callers alternate: a waiter that sees the counter move already holds the line with the
  // bytes (one line transfer instead of two). Only `rank` writes them, before publishing; the
  // caller decides when a bank is free again.
  static constexpr size_t kInlineBytes = 16;
  std::byte* inline_bytes(int rank, int index, int bank) const {
    return reinterpret_cast<std::byte*>(&flag_word(rank, index)) + sizeof(uint64_t) +
           static_cast<size_t>(bank) * kBankBytes;
  }
  // One more word per bank, after its bytes, under the same rules (the shm allreduce puts its
  // call's fingerprint there, so peers check they are in the same call without another line).
  uint64_t& inline_word(int rank, int index, int bank) const {
    return *reinterpret_cast<uint64_t*>(inline_bytes(rank, index, bank) + kInlineBytes);
  }

  // Shows the local peers which collective call this rank is in (a few stores to its own line).
  void announce(const CallSignature& call);
  // A peer whose announced call has `mine.sequence` but differs from `mine`: its rank (and its call
  // in `theirs`), or -1. For slow paths: it reads every peer's line.
  int find_disagreement(const CallSignature& mine, CallSignature& theirs) const;

  // A slot where the collectives layer keeps what it learns across calls on this window (timings,
  // choices); it lives exactly as long as the window.
  std::shared_ptr<void>& collective_state() { return collective_state_; }

  // This rank's counter `index` (as it last published it).
  uint64_t own_flag(int index) const {
    return std::atomic_ref<uint64_t>(flag_word(rank_, index)).load(std::memory_order_relaxed);
  }
  // Stores this rank's counter `index`; everything written before it is visible to a rank that
  // sees the new value.
  void publish(int index, uint64_t value) {
    std::atomic_ref<uint64_t>(flag_word(rank_, index)).store(value, std::memory_order_release);
  }

  // This rank failed: its counters become a value no wait of a peer ever sees as reached, so a
  // peer that would otherwise complete a call from what this rank published before failing goes
  // to its slow path instead, and finds the abort notice there.
  void poison();

  // Without waiting: whether counter `index` of every other rank is >= value (if so, what they
  // wrote before publishing it is visible). Lets an algorithm do other work instead of waiting.
  bool peers_reached(int index, uint64_t value) {
    return known_[index] >= value || all_reached(index, value);
  }

  // Returns once counter `index` of every other rank is >= value (what they wrote before
  // publishing it is then visible). Throws Error(kPeerFailure) naming a rank that died or sent an
  // abort notice, Error(kTimeout) at the deadline naming `what` and the ranks not there yet.
  void wait_peers(int index, uint64_t value, Deadline deadline, std::string_view what) {
    if (peers_reached(index, value)) return;
    wait_slow(index, value, deadline, what);
  }

 private:
  static constexpr size_t kBankBytes = kInlineBytes + sizeof(uint64_t);
  static constexpr uint64_t kPoisoned = uint64_t{1} << 63;  // negative as int64
  static constexpr int kCallLine = kFlags;  // the line after the collectives' counters
  static constexpr int kLines = kFlags + 1;
  uint64_t& flag_word(int rank, int index) const;
  // Word `i` of bank `bank` of `rank`'s call line, as an atomic.
  std::atomic_ref<uint64_t> call_word(int rank, int bank, int i) const;
  // Also raises known_[index] to the minimum seen when every peer has reached `value`.
  bool all_reached(int index, uint64_t value);
  void wait_slow(int index, uint64_t value, Deadline deadline, std::string_view what);

  Transport& transport_;
  int rank_;
  int size_;
  std::byte* flags_;
  std::byte* areas_;
  size_t area_bytes_;
  size_t area_stride_;
  std::shared_ptr<void> mapping_;
  int spin_rounds_;
  int spin_budget_;  // adaptive, in [0, spin_rounds_]
  // Per counter, a value every peer has been seen to reach: waits below it need no shared load.
  uint64_t known_[kFlags] = {};
  std::vector<int> pending_;  // reused by wait_slow
  std::shared_ptr<void> collective_state_;
};

}  // namespace tutti::transport
