// Interrupt: how a communicator's waits learn, from another thread, that they must stop: abort()
// was called, or the launcher is gone. Raising it sets a flag that every wait round reads (one
// relaxed load) and keeps the first error, which the interrupted wait throws.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>

#include "core/deadline.hpp"
#include "tutti/error.hpp"

namespace tutti::comm {

class Interrupt {
 public:
  // The first error raised stays.
  void raise(const Error& error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
    flag_.store(true, std::memory_order_seq_cst);
  }
  bool raised() const { return flag_.load(std::memory_order_seq_cst); }
  Error error() const {
    std::lock_guard lock(mutex_);
    return error_ ? *error_ : Error(ErrorCode::kInternal, "interrupt read before it was raised");
  }
  const std::atomic<bool>* flag() const { return &flag_; }

 private:
  mutable std::mutex mutex_;
  std::optional<Error> error_;
  std::atomic<bool> flag_{false};
};

// What the call running on this thread may be stopped by: its communicator's interrupt and its
// deadline. Waits that happen inside a call but outside the transport (the store, while a
// communicator builds its shared-memory window on first use) look here, so abort() and the call's
// timeout reach them too.
class CallScope {
 public:
  CallScope(const Interrupt& interrupt, Deadline deadline)
      : saved_interrupt_(interrupt_), saved_deadline_(deadline_) {
    interrupt_ = &interrupt;
    deadline_ = deadline;
  }
  ~CallScope() {
    interrupt_ = saved_interrupt_;
    deadline_ = saved_deadline_;
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  // Throws the interrupt's error if the current call's communicator was interrupted.
  static void check() {
    if (interrupt_ && interrupt_->raised()) throw interrupt_->error();
  }
  // The current call's deadline (never outside a call).
  static Deadline deadline() { return deadline_; }

 private:
  static inline thread_local const Interrupt* interrupt_ = nullptr;
  static inline thread_local Deadline deadline_ = Deadline::never();
  const Interrupt* saved_interrupt_;
  Deadline saved_deadline_;
};

}  // namespace tutti::comm
