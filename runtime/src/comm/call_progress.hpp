// Where one communicator's calls are: the call under way (or the last one entered), and the last
// one that returned. Written by the thread that runs the calls, read by the stall watch's thread
// (stall_watch.hpp) without a lock. Entering a call costs one clock read and a few relaxed stores,
// leaving it one store (measured in docs/OBSERVABILITY.md); how long a communicator has been idle
// the watch measures itself, to its period.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "transport/call_signature.hpp"

namespace tutti::comm {

class CallProgress {
 public:
  using Clock = std::chrono::steady_clock;

  struct Snapshot {
    transport::CallSignature call;  // the call entered last (sequence 0: none yet)
    uint64_t finished = 0;          // sequence of the last call that returned or failed
    Clock::time_point entered_at;
    bool in_call() const { return call.sequence > finished; }
  };

  void enter(const transport::CallSignature& call) {
    kind_.store(static_cast<uint8_t>(call.kind), std::memory_order_relaxed);
    dtype_.store(call.dtype, std::memory_order_relaxed);
    op_.store(call.op, std::memory_order_relaxed);
    root_.store(call.root, std::memory_order_relaxed);
    count_.store(call.count, std::memory_order_relaxed);
    entered_at_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    // Last, with release: a reader that sees this sequence sees the fields above (or newer ones
    // of a later call, which only makes the call look younger: never a false stall).
    entered_.store(call.sequence, std::memory_order_release);
  }

  void leave(uint64_t sequence) { finished_.store(sequence, std::memory_order_release); }

  Snapshot snapshot() const {
    Snapshot s;
    s.finished = finished_.load(std::memory_order_acquire);
    s.call.sequence = entered_.load(std::memory_order_acquire);
    s.call.kind = static_cast<transport::CallKind>(kind_.load(std::memory_order_relaxed));
    s.call.dtype = dtype_.load(std::memory_order_relaxed);
    s.call.op = op_.load(std::memory_order_relaxed);
    s.call.root = root_.load(std::memory_order_relaxed);
    s.call.count = count_.load(std::memory_order_relaxed);
    s.entered_at = Clock::time_point(Clock::duration(entered_at_.load(std::memory_order_relaxed)));
    return s;
  }

 private:
  std::atomic<uint64_t> entered_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<uint8_t> kind_{0};
  std::atomic<int8_t> dtype_{-1};
  std::atomic<int8_t> op_{-1};
  std::atomic<int32_t> root_{-1};
  std::atomic<uint64_t> count_{0};
  std::atomic<Clock::rep> entered_at_{0};
};

}  // namespace tutti::comm
