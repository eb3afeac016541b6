// ExclusiveCall: one thread in a communicator at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"

namespace tutti::comm {

// The entry of one communicator: idle, held by one call, or held by one call while another thread
// was refused. Entering and refusing are one atomic step each, and so is the holder's leaving, so
// a refusal is always seen by the call it collided with (CallGate::leave_if_alone).
class CallGate {
 public:
  // Takes the gate when idle. Otherwise marks it contended (the holder's leave_if_alone then
  // fails) and returns false.
  bool enter() {
    uint8_t state = state_.load(std::memory_order_relaxed);
    for (;;) {
      if (state == kIdle) {
        if (state_.compare_exchange_weak(state, kHeld, std::memory_order_acquire)) return true;
      } else if (state_.compare_exchange_weak(state, kContended, std::memory_order_relaxed)) {
        return false;
      }
    }
  }
  // Takes the gate when idle and leaves no mark otherwise: for the aborting thread's own use of
  // the transport (deliver_abort_if_idle), which is not a call of the communicator's.
  bool enter_if_idle() {
    uint8_t idle = kIdle;
    return state_.compare_exchange_strong(idle, kHeld, std::memory_order_acquire);
  }
  // Leaves, unless another thread was refused while the gate was held: then it stays held (the
  // holder fails its call first) and false is returned.
  [[nodiscard]] bool leave_if_alone() {
    uint8_t held = kHeld;
    return state_.compare_exchange_strong(held, kIdle, std::memory_order_release);
  }
  void leave() { state_.store(kIdle, std::memory_order_release); }

 private:
  static constexpr uint8_t kIdle = 0;
  static constexpr uint8_t kHeld = 1;
  static constexpr uint8_t kContended = 2;  // held, and another thread was refused meanwhile
  std::atomic<uint8_t> state_{kIdle};
};

// Marks the communicator busy for one call: a second thread entering meanwhile is refused instead
// of corrupting the first call's state, and `refused` runs first (the communicator aborts itself).
//
// Why refusing alone is not enough: ranks pair their calls by order, and two threads of one rank
// have no order the peers could share. When each rank refused a different thread, rank 0's thread
// A met rank 1's thread B and both returned success with the other thread's sum. So a second
// thread breaks the communicator on every rank: the running call fails, the peers hear the abort,
// and no later call can pair across threads.
//
// The running call must fail even when it got through its last wait before the refused thread
// raised the abort (formatting the refusal takes microseconds, a call in a world of one less):
// finish() says whether a refusal happened at any moment while this call held the gate.
class ExclusiveCall {
 public:
  template <typename Refused>
  ExclusiveCall(CallGate& gate, int rank, std::string_view name, Refused&& refused) : gate_(gate) {
    if (!gate_.enter()) {
      refused();
      throw make_error(
          ErrorCode::kInvalidArgument,
          "{} on rank {}: another thread is running a call on this communicator right now, so "
          "this communicator is now aborted on every rank (ranks pair calls by order, and two "
          "threads of a rank have none the peers could share). A communicator runs one call at "
          "a time: call it from one thread (or serialize the calls), or give each thread a "
          "communicator of its own (dup)",
          name, rank);
    }
  }
  ~ExclusiveCall() {
    if (!released_) gate_.leave();
  }
  ExclusiveCall(const ExclusiveCall&) = delete;
  ExclusiveCall& operator=(const ExclusiveCall&) = delete;

  // Leaves after a call that succeeded. False, still holding, when another thread was refused
  // while this call ran: the call must then fail (it may have paired with another thread's call
  // on a peer), before the destructor lets the next call in.
  [[nodiscard]] bool finish() {
    released_ = gate_.leave_if_alone();
    return released_;
  }

 private:
  CallGate& gate_;
  bool released_ = false;
};

}  // namespace tutti::comm
