// ExclusiveCall: one thread in a communicator at a time.
#pragma once

#include <atomic>
#include <string_view>

#include "core/error.hpp"

namespace tutti::comm {

// Marks the communicator busy for one call: a second thread entering meanwhile is refused instead
// of corrupting the first call's state.
class ExclusiveCall {
 public:
  ExclusiveCall(std::atomic<bool>& busy, int rank, std::string_view name) : busy_(busy) {
    if (busy_.exchange(true, std::memory_order_acquire))
      throw make_error(
          ErrorCode::kInvalidArgument,
          "{} on rank {}: another thread is running a call on this communicator right now. A "
          "communicator runs one call at a time: call it from one thread (or serialize the "
          "calls), or give each thread a communicator of its own (dup)",
          name, rank);
  }
  ~ExclusiveCall() { busy_.store(false, std::memory_order_release); }
  ExclusiveCall(const ExclusiveCall&) = delete;
  ExclusiveCall& operator=(const ExclusiveCall&) = delete;

 private:
  std::atomic<bool>& busy_;
};

}  // namespace tutti::comm
