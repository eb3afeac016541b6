// Interrupt: how a communicator's waits learn, from another thread, that they must stop: abort()
// was called, or the launcher is gone. Raising it sets a flag that every wait round reads (one
// relaxed load) and keeps the first error, which the interrupted wait throws.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>

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

}  // namespace tutti::comm
