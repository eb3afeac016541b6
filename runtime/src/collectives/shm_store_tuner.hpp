// Picks, per message size class, how the shm allreduce writes into the shared window: streaming
// (non-temporal) stores are 2.5x faster at 1-4 MiB when the two vCPUs sit on cores that share no
// cache and 2x slower when they do, and the host moves the vCPUs between the two within minutes.
// So nothing is assumed: each class times calls of both kinds, keeps the faster, and keeps trying
// the other now and then to notice when the placement changes. The choice is this rank's alone;
// it never changes results, only speed.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "reduce/reduce.hpp"

namespace tutti::collectives {

class ShmStoreTuner {
 public:
  enum class Mode { kAuto, kCached, kStreaming };
  // Below this, the working set sits in cache on both sides and streaming only hurts.
  static constexpr size_t kMinTunedBytes = 256 << 10;

  explicit ShmStoreTuner(Mode mode) : mode_(mode) {}

  // The stores a call of `bytes` uses.
  reduce::CopyStores choose(size_t bytes) {
    if (mode_ == Mode::kCached || bytes < kMinTunedBytes) return reduce::CopyStores::kCached;
    if (mode_ == Mode::kStreaming) return reduce::CopyStores::kStreaming;
    Class& c = classes_[class_of(bytes)];
    ++c.calls;
    // Warm up both, then the faster, with every kExploreEvery-th call on the other one.
    if (c.samples[0] < kWarmup || c.samples[1] < kWarmup)
      return c.samples[1] < c.samples[0] ? kinds(1) : kinds(0);
    const int best = c.ns_per_byte[1] < c.ns_per_byte[0] ? 1 : 0;
    return kinds(c.calls % kExploreEvery == 0 ? 1 - best : best);
  }

  // Whether calls of `bytes` are timed at all (only auto mode, only tuned sizes).
  bool timed(size_t bytes) const { return mode_ == Mode::kAuto && bytes >= kMinTunedBytes; }

  // A call of `bytes` with `stores` took `ns` (the whole call, waits for peers included).
  void record(size_t bytes, reduce::CopyStores stores, double ns) {
    Class& c = classes_[class_of(bytes)];
    const int k = stores == reduce::CopyStores::kStreaming ? 1 : 0;
    const double v = ns / static_cast<double>(bytes);
    c.ns_per_byte[k] = c.samples[k] == 0 ? v : c.ns_per_byte[k] + kWeight * (v - c.ns_per_byte[k]);
    ++c.samples[k];
  }

 private:
  static constexpr int kWarmup = 2;
  static constexpr uint64_t kExploreEvery = 16;
  // Weight of the newest call in the running average: recent enough to follow a vCPU move within a
  // few calls, smooth enough that one descheduled call does not flip the choice.
  static constexpr double kWeight = 0.25;

  struct Class {
    uint64_t calls = 0;
    int samples[2] = {0, 0};
    double ns_per_byte[2] = {0, 0};
  };

  static reduce::CopyStores kinds(int k) {
    return k == 1 ? reduce::CopyStores::kStreaming : reduce::CopyStores::kCached;
  }
  // Power-of-two classes: 256-511 KiB, 512 KiB-1 MiB, ...
  static size_t class_of(size_t bytes) { return static_cast<size_t>(std::bit_width(bytes)); }

  Mode mode_;
  std::array<Class, 65> classes_{};
};

}  // namespace tutti::collectives
