// ExclusiveCall: one thread in a communicator at a time.
#pragma once

#include <atomic>
#include <string_view>

#include "core/error.hpp"

namespace tutti::comm {

// Marks the communicator busy for one call: a second thread entering meanwhile is refused instead
// of corrupting the first call's state, and `refused` runs first (the communicator aborts itself).
//
// Why refusing alone is not enough: ranks pair their calls by order, and two threads of one rank
// have no order the peers could share. When each rank refused a different thread, rank 0's thread
// A met rank 1's thread B and both returned success with the other thread's sum (issue 26). So a
// second thread breaks the communicator on every rank: the running call fails, the peers hear the
// abort, and no later call can pair across threads.
class ExclusiveCall {
 public:
  template <typename Refused>
  ExclusiveCall(std::atomic<bool>& busy, int rank, std::string_view name, Refused&& refused)
      : busy_(busy) {
    if (busy_.exchange(true, std::memory_order_acquire)) {
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
  ~ExclusiveCall() { busy_.store(false, std::memory_order_release); }
  ExclusiveCall(const ExclusiveCall&) = delete;
  ExclusiveCall& operator=(const ExclusiveCall&) = delete;

 private:
  std::atomic<bool>& busy_;
};

}  // namespace tutti::comm
