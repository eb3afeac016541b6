// The thread that runs a process group's operations. torch.distributed issues a group's
// collectives in the same order on every rank and expects them to run in that order, so one
// thread per group running tutti's synchronous calls first-in first-out is both correct and the
// fastest plan here: a tutti Communicator's calls are made by one thread at a time anyway, and a
// synchronous call on shared memory or TCP has no negotiation round (the engine's *_async calls
// agree on names across ranks first, which torch has already done by ordering).
//
// Point-to-point operations are posted (isend/irecv) and then watched: the thread polls them
// between jobs, so a rank's send never waits for its peer's receive before the next job runs.
// Collectives on CUDA tensors return once enqueued on the caller's stream (as NCCL's backend's
// do), and the communicator's device work is watched the same way: its failures and deadlines are
// seen between jobs, not only at the next op.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "tutti/tutti.hpp"

namespace tutti::torch_backend {

class Worker {
 public:
  Worker();
  // Runs everything already queued and waits for the watched requests, then stops.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // From any thread: `job` runs on the worker thread after every job enqueued before it. A job
  // reports its own errors (the worker only keeps an escaping exception from ending the thread).
  void enqueue(std::function<void()> job);

  // From a job only: `done` runs (on the worker thread) with nullptr once `request` completes,
  // or with its error.
  void watch(tutti::Request request, std::function<void(std::exception_ptr)> done);
  // From a job only, after a call that returned once enqueued (CallOptions::enqueue_only) on
  // `comm`, which this worker drives: its device work is looked at between jobs (device_done)
  // until all of it completed; a failure among it is a warning naming `rank` and the call (the ops
  // have completed, so no Work carries it; the group's later ops fail with it). One watch per
  // communicator at a time covers every such call made on it.
  void watch_device(const tutti::Communicator& comm, int rank);

 private:
  struct Watched {
    std::function<bool()> test;  // true once complete; throws the failure
    std::function<void()> wait;  // until complete (at shutdown); throws the failure
    std::function<void(std::exception_ptr)> done;
    const tutti::Communicator* device = nullptr;  // a device watch's communicator
  };

  void run();
  void poll_watched();
  void finish_watched();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<Watched> watched_;  // the worker thread's own
  std::thread thread_;            // last: starts once the rest exists
};

}  // namespace tutti::torch_backend
