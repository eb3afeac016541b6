// Picks, per message size class, how the shm allreduce stores into the shared window and into the
// caller's output.
//
// Window: streaming (non-temporal) stores are 2.5x faster at 1-4 MiB when the two vCPUs sit on
// cores that share no cache and 2x slower when they do, and the host moves the vCPUs between the
// two within minutes.
// Output: an output line that is not in cache is read from memory before it is overwritten
// (read-for-ownership). Out of place that is a third of the memory traffic once send, recv and the
// window outgrow the cache (out of place ran at 0.57-0.59x in place from 8 MiB, 2 ranks); in place
// with 4 ranks on 2 vCPUs the lines read at staging are often gone by the time the result comes
// back (streaming was 1.15x faster at 32 MiB). Streaming stores skip that read, but where the
// output fits in cache they push it out to memory and the next call reads it back. In place and
// out of place are tuned apart.
//
// So nothing is assumed: each class times calls of every combination, keeps the fastest, and
// keeps trying the others now and then to notice when the placement changes. A class met for the
// first time starts from the nearest class already measured (same placement) instead of timing
// every combination again: a combination can be 2.7x slower than the best at 64 MiB, and a
// benchmark sweep of a few calls per size paid for that warm-up in every class. Its estimates are
// rescaled by its own first call, unless that call ran far slower per byte than the neighbour's
// (the size left the cache: all four are then warmed up); the neighbour's runner-up, if close, is
// tried at once, and if it wins here the neighbour's order does not hold (64 MiB's best ran 2x
// slower than another at 256 MiB), so the combinations not measured here are warmed up as in a new
// class. The others are still tried now and then. A try costs more than its own call (streaming
// stores leave the buffers out of cache for the next one; at 1 MiB with the vCPUs near each other,
// trying every 16th call halved out-of-place throughput), so a combination measured far behind is
// tried rarely, and the calls around a try are not counted.
//
// Every rank makes the same choice: the ranks of one call wait for each other, so a rank that tuned
// alone timed the slowest rank's combination, not its own, and ranks that had settled on different
// ones stayed there (4 ranks at 256 MiB in place: two ranks on cached stores, two on streaming,
// every call 1.9x slower than all on streaming, and no call telling any rank so). So only rank 0's
// times are learned from, by every rank, two tuned calls late: rank 0 publishes the time of tuned
// call t in its window line, and every rank reads it at the start of call t + 2 (by then each has
// seen rank 0 enter call t + 1, after it wrote t). Identical inputs give identical choices. The
// choice never changes results, only speed.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "reduce/reduce.hpp"

namespace tutti::collectives {

struct ShmStores {
  reduce::CopyStores window = reduce::CopyStores::kCached;
  reduce::CopyStores output = reduce::CopyStores::kCached;
};

struct ShmChoice {
  ShmStores stores;
  // This call's number among the tuned ones (messages of kMinTunedBytes or more, in every mode:
  // the same number on every rank, which make the same calls); 0 for a smaller message.
  uint64_t call = 0;
};

class ShmStoreTuner {
 public:
  // kCached and kStreaming (TUTTI_SHM_STORES) force both the window's and the output's stores.
  enum class Mode { kAuto, kCached, kStreaming };
  // Below this, the working set sits in cache on both sides and streaming only hurts.
  static constexpr size_t kMinTunedBytes = 256 << 10;

  explicit ShmStoreTuner(Mode mode) : mode_(mode) {}

  // The stores a call of `bytes` uses.
  ShmChoice choose(size_t bytes, bool in_place) {
    if (bytes < kMinTunedBytes) return {};
    const uint64_t call = ++tuned_calls_;
    Recent& recent = recent_[call % kRecent];
    recent = Recent{call, bytes, in_place, -1, false};
    if (mode_ == Mode::kCached) return {{}, call};
    if (mode_ == Mode::kStreaming) return {stores_of(kArms - 1), call};
    Class& c = class_of(bytes, in_place);
    const int arm = decide(c, in_place);
    recent.arm = arm;
    // A trial's first call still pays for the combination before it, and so does the first call
    // after a trial: neither is learned from.
    recent.counted = c.calls != c.aftermath_call && !(c.trial >= 0 && c.calls == c.trial_start);
    return {stores_of(arm), call};
  }

  // Tuned calls so far (the number the next one gets, minus one).
  uint64_t tuned_calls() const { return tuned_calls_; }
  // Before choosing for a call of `bytes`: the tuned call whose time is to be learned now (two
  // tuned calls before this one), or 0 for none.
  uint64_t time_due(size_t bytes) const {
    return bytes >= kMinTunedBytes && tuned_calls_ >= 2 ? tuned_calls_ - 1 : 0;
  }

  // Tuned call `call` took `ns` (the whole call, waits for peers included) with `used`, as
  // measured on the rank every rank learns from. A call this tuner no longer remembers (more than
  // kRecent tuned calls ago), or one run with other stores than chosen here (that rank forces
  // TUTTI_SHM_STORES), teaches nothing.
  void learn(uint64_t call, ShmStores used, double ns) {
    const Recent& r = recent_[call % kRecent];
    if (call == 0 || r.call != call || !r.counted || arm_of(used) != r.arm || !(ns > 0)) return;
    Class& c = class_of(r.bytes, r.in_place);
    const int k = r.arm;
    const double v = ns / static_cast<double>(r.bytes);
    if (c.seeded) {
      // The neighbour's estimates say which combination is faster, not how fast this size is:
      // scale them all by this first call's measure.
      const double scale = c.ns_per_byte[k] > 0 ? v / c.ns_per_byte[k] : 1.0;
      for (double& e : c.ns_per_byte) e *= scale;
      c.seeded = false;
      if (scale > kFarBehind) {
        // Far slower per byte than at the neighbour: this size left the cache the neighbour's
        // best relied on (2 ranks, 64 MiB to 256 MiB in place: cached stores went from best to
        // 3-4x slower than streaming ones), so its order says nothing here.
        warm_up_unmeasured(c, k);
        c.verify_arm = -1;
      }
    }
    // A best whose call took far longer than usual, and longer than the runner-up is expected to
    // take: the vCPUs may have moved. One descheduled call (a 4 ms scheduler tick with 4 ranks on
    // 2 vCPUs) rarely passes the second test when the runner-up is far behind, so it does not buy
    // a costly trial.
    if (c.samples[k] > 0 && k == best_of(c) && v > kFarBehind * c.ns_per_byte[k] &&
        v > c.ns_per_byte[runner_up(c, k)])
      c.surprised = true;
    if (k == c.verify_arm) {
      // The seed's runner-up, measured here. Faster than the seed's best: the neighbour's order
      // does not hold at this size, so the combinations not measured here get warm-up trials.
      const int best = best_of(c);
      if (best != k && c.measured[best] && v < c.ns_per_byte[best]) warm_up_unmeasured(c, k);
      c.verify_arm = -1;
    }
    // A first time here replaces the neighbour's estimate rather than averaging with it.
    c.ns_per_byte[k] = c.samples[k] == 0 || !c.measured[k]
                           ? v
                           : c.ns_per_byte[k] + kWeight * (v - c.ns_per_byte[k]);
    ++c.samples[k];
    c.measured[k] = true;
  }

  // Tuned calls a time may arrive late by and still be learned from.
  static constexpr uint64_t kRecent = 4;

 private:
  static constexpr uint64_t kExploreEvery = 16;
  // A combination slower than the best by this factor is tried only every kRareTurns-th turn.
  static constexpr double kFarBehind = 1.5;
  static constexpr uint64_t kRareTurns = 8;
  // Weight of the newest call in the running average: recent enough to follow a vCPU move within a
  // few calls, smooth enough that one descheduled call does not flip the choice.
  static constexpr double kWeight = 0.25;
  // Arm k: bit 0 streams into the window, bit 1 streams into the output.
  static constexpr int kArms = 4;

  struct Class {
    uint64_t calls = 0;
    int samples[kArms] = {0, 0, 0, 0};
    double ns_per_byte[kArms] = {0, 0, 0, 0};
    bool measured[kArms] = {false, false, false, false};  // in this class, not seeded
    bool tried[kArms] = {false, false, false, false};     // its warm-up trial was started
    bool seeded = false;     // estimates copied from another class, not yet rescaled here
    int verify_arm = -1;     // the seed's runner-up, tried on the class's second call (-1: none)
    bool surprised = false;  // the best's last call took kFarBehind times its estimate
    int trial = -1;          // the combination on trial, or -1
    uint64_t trial_start = 0;
    uint64_t aftermath_call = 0;  // the first call after the last trial (not recorded)

    bool warm() const {
      for (int n : samples)
        if (n == 0) return false;
      return true;
    }
  };

  // The combination for the next call of class `c`.
  int decide(Class& c, bool in_place) {
    if (c.calls == 0) seed_from_nearest(c, in_place);
    ++c.calls;
    // A trial runs its combination for two calls in a row and counts only the second: the first
    // still pays for the combination before it (streaming stores leave the window and the output
    // in memory, so the next call finds them there), and so does the first call after the trial.
    if (c.trial >= 0) {
      if (c.calls == c.trial_start + 1) return c.trial;
      c.trial = -1;
      c.aftermath_call = c.calls;
    }
    // Warm up: one trial of every combination not measured yet (and not on its way: a time
    // arrives two tuned calls late).
    for (int k = 0; k < kArms; ++k)
      if (c.samples[k] == 0 && !c.tried[k]) {
        c.tried[k] = true;
        return start_trial(c, k);
      }
    const int best = best_of(c);
    if (c.verify_arm >= 0 && c.calls == 2) {
      // A seeded class tries the seed's runner-up on its second call (its first ran the seed's
      // best, no trial): the best at 64 MiB can be 2x slower at 256 MiB, and the regular turns
      // come every kExploreEvery calls.
      return start_trial(c, c.verify_arm);
    }
    if (c.surprised) {
      // The best just ran far slower than it used to (the vCPUs moved): try the runner-up now
      // rather than at the next turn, which may be many seconds away at 256 MiB.
      c.surprised = false;
      return start_trial(c, runner_up(c, best));
    }
    if (c.calls % kExploreEvery != 0) return best;
    // Every kExploreEvery-th call a trial of another combination, each in turn. One far behind
    // costs most to try, so only every kRareTurns-th turn, unless its estimate is a neighbour's.
    const uint64_t turn = c.calls / kExploreEvery;
    int other = static_cast<int>(turn % uint64_t{kArms - 1});
    other = other < best ? other : other + 1;
    if (c.measured[other] && c.ns_per_byte[other] > kFarBehind * c.ns_per_byte[best] &&
        turn % kRareTurns != 0)
      return best;
    return start_trial(c, other);
  }

  // The neighbour's estimates of every combination but `k` not measured here are dropped: each
  // gets a warm-up trial, as in a class met for the first time.
  static void warm_up_unmeasured(Class& c, int k) {
    for (int j = 0; j < kArms; ++j)
      if (j != k && !c.measured[j]) {
        c.samples[j] = 0;
        c.tried[j] = false;
      }
  }
  static int start_trial(Class& c, int k) {
    c.trial = k;
    c.trial_start = c.calls;
    return k;
  }
  // The fastest measured combination other than `except` (-1: none excepted); cached stores
  // while none is measured.
  static int fastest(const Class& c, int except) {
    int best = -1;
    for (int k = 0; k < kArms; ++k)
      if (k != except && c.samples[k] > 0 && (best < 0 || c.ns_per_byte[k] < c.ns_per_byte[best]))
        best = k;
    return best >= 0 ? best : (except == 0 ? 1 : 0);
  }
  static int best_of(const Class& c) { return fastest(c, -1); }
  static int runner_up(const Class& c, int best) { return fastest(c, best); }

  // Starts a new class from the nearest warm one of the same placement, if any.
  void seed_from_nearest(Class& c, bool in_place) {
    auto& table = classes_[in_place ? 1 : 0];
    const auto at = static_cast<size_t>(&c - table.data());
    for (size_t d = 1; d < table.size(); ++d) {
      for (const size_t j : {at - d, at + d}) {  // at - d wraps past 0 to a value >= size
        if (j >= table.size() || !table[j].warm()) continue;
        for (int k = 0; k < kArms; ++k) {
          c.ns_per_byte[k] = table[j].ns_per_byte[k];
          c.samples[k] = 1;
        }
        c.seeded = true;
        // Its runner-up is tried early where the neighbour measured it close to its best.
        const int best = best_of(c), second = runner_up(c, best);
        if (c.ns_per_byte[second] <= kFarBehind * c.ns_per_byte[best]) c.verify_arm = second;
        return;
      }
    }
  }

  static reduce::CopyStores kind(bool streaming) {
    return streaming ? reduce::CopyStores::kStreaming : reduce::CopyStores::kCached;
  }
  static ShmStores stores_of(int k) { return {kind((k & 1) != 0), kind((k & 2) != 0)}; }
  static int arm_of(ShmStores s) {
    return (s.window == reduce::CopyStores::kStreaming ? 1 : 0) |
           (s.output == reduce::CopyStores::kStreaming ? 2 : 0);
  }
  // Power-of-two classes (256-511 KiB, 512 KiB-1 MiB, ...), in place and out of place apart.
  Class& class_of(size_t bytes, bool in_place) {
    return classes_[in_place ? 1 : 0][static_cast<size_t>(std::bit_width(bytes))];
  }

  // What the last kRecent tuned calls chose, to learn from their times when they arrive.
  struct Recent {
    uint64_t call = 0;
    size_t bytes = 0;
    bool in_place = false;
    int arm = -1;  // -1: a forced mode chose
    bool counted = false;
  };

  Mode mode_;
  std::array<std::array<Class, 65>, 2> classes_{};
  uint64_t tuned_calls_ = 0;
  std::array<Recent, kRecent> recent_{};
};

}  // namespace tutti::collectives
