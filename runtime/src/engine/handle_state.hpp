// The state one asynchronous operation shares between the caller's handle and the engine: done or
// failed, the error, the result an allgather or alltoall produces, and a completion callback.
// Completed exactly once, by whichever thread runs the engine's cycle (the engine's own, or a
// caller's thread waiting for its handle: Engine::run_cycles_until).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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

class HandleState;

// What runs an engine's cycles on a waiting caller's thread (the Engine): a thread that would
// only sleep until its handle finishes runs the cycles itself, so that on a machine with few
// cores the engine's own thread does not compete with it for one.
class CycleRunner {
 public:
  virtual ~CycleRunner() = default;
  // Runs cycles on this thread until `handle` finished, the engine stopped or `deadline` passed.
  virtual void run_cycles_until(const HandleState& handle, Deadline deadline) = 0;
};

class HandleState {
 public:
  // User-provided (in the .cc): make_shared then constructs the members without first zeroing
  // all of the object, which was a fifth of an enqueue's CPU.
  HandleState();

  // True once completed or failed.
  bool finished() const;
  // Returns once finished (throws its error), or false when `deadline` passes first. With
  // `run_cycles`, the calling thread runs the engine's cycles meanwhile (see CycleRunner).
  bool wait(Deadline deadline, bool run_cycles = false) const;
  // Runs `callback` once finished: at once on this thread if it already is (and its callbacks
  // ran), else on the engine's thread. Several callbacks run in the order they were given.
  void then(Callback callback);

  void complete();
  void fail(const Error& error);
  // Finishes without running the callbacks: the engine's own thread runs them later
  // (run_deferred_callbacks), never the caller's thread that completed the handle. True when
  // there are callbacks to run.
  bool finish_deferring_callbacks(std::optional<Error> error);
  void run_deferred_callbacks();

  // The engine that runs this handle's cycles, for wait(.., true); empty: none.
  std::weak_ptr<CycleRunner> runner;

  // Results, written by the engine before complete(): the gathered rows of an allgather or
  // alltoall (elements of each rank, in rank order) and the rank that joined last.
  std::vector<std::byte> output;
  std::vector<uint64_t> output_rows;
  int last_joined = -1;
  // How long wait() without a timeout waits: beyond anything the engine lets an operation take.
  Deadline::Clock::duration wait_limit = std::chrono::hours(24);

 private:
  void finish(std::optional<Error> error);
  void run(std::vector<Callback>& callbacks) const;

  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  // Set once, under mutex_, after error_: a waiter that sees it true reads error_ without the
  // lock. A step's caller waits on one handle after another, most of them already finished.
  std::atomic<bool> finished_ = false;
  std::optional<Error> error_;
  std::vector<Callback> callbacks_;
  bool deferred_ = false;  // finished, its callbacks not yet run
};

}  // namespace tutti::engine
