// The state one asynchronous operation shares between the caller's handle and the engine: done or
// failed, the error, the result an allgather or alltoall produces, and a completion callback.
// Completed exactly once, by the engine thread (or by enqueue when the request is refused).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "core/deadline.hpp"
#include "tutti/async.hpp"
#include "tutti/error.hpp"

namespace tutti::engine {

using Callback = std::function<void(const Error*)>;

// True on an engine's own thread, where completion callbacks run: waiting there for a handle
// would stop the engine that must finish it.
extern thread_local bool on_engine_thread;

class HandleState {
 public:
  // True once completed or failed.
  bool finished() const;
  // Returns once finished (throws its error), or false when `deadline` passes first.
  bool wait(Deadline deadline) const;
  // Runs `callback` once finished: at once on this thread if it already is, else on the engine's
  // thread. Several callbacks run in the order they were given.
  void then(Callback callback);

  void complete();
  void fail(const Error& error);

  // Results, written by the engine before complete(): the gathered rows of an allgather or
  // alltoall (elements of each rank, in rank order) and the rank that joined last.
  std::vector<std::byte> output;
  std::vector<uint64_t> output_rows;
  int last_joined = -1;
  // How long wait() without a timeout waits: beyond anything the engine lets an operation take.
  Deadline::Clock::duration wait_limit = std::chrono::hours(24);

 private:
  void finish(std::optional<Error> error);

  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool finished_ = false;
  std::optional<Error> error_;
  std::vector<Callback> callbacks_;
};

}  // namespace tutti::engine
