#include "work.hpp"

#include <c10/util/Exception.h>

#include <thread>

namespace tutti::torch_backend {

namespace {

std::vector<c10::Device> devices_of(const std::optional<c10::Stream>& stream) {
  if (!stream) return {};
  return {stream->device()};
}

// How long a timed-out wait() gives the aborted op to stop. tutti's calls fail at once when their
// communicator is aborted, so this only bounds what cannot happen: an op that never stops.
constexpr std::chrono::seconds kStopAfterAbort{30};

}  // namespace

bool GroupLink::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (comm_ == nullptr) return false;
  comm_->abort(reason);
  return true;
}

void GroupLink::detach() {
  std::lock_guard lock(mutex_);
  comm_ = nullptr;
}

TuttiWork::TuttiWork(std::shared_ptr<GroupLink> group, c10d::OpType type,
                     const char* profiling_title, std::string label,
                     std::vector<at::Tensor> outputs, const std::optional<c10::Stream>& stream)
    : c10d::Work(group->rank(), type, profiling_title),
      group_(std::move(group)),
      label_(std::move(label)),
      outputs_(std::move(outputs)),
      stream_(stream),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), devices_of(stream))) {}

bool TuttiWork::isCompleted() {
  // device_done_ is set before finish() marks the Work completed, and never after.
  return c10d::Work::isCompleted() && (!device_done_ || device_done_->query());
}

bool TuttiWork::wait(std::chrono::milliseconds timeout) {
  // torch's own Work::wait(timeout) throws "Operation timed out!" and leaves the op running, so
  // that it may write the caller's tensors at any later moment (when the peers arrive).
  if (timeout != kNoTimeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_until(lock, until, [this] { return completed_; })) {
        lock.unlock();
        timed_out(timeout);
      }
    }
    // An op on CUDA tensors completed once enqueued: the timeout covers its device work too.
    while (device_done_ && !device_done_->query()) {
      if (std::chrono::steady_clock::now() >= until) timed_out(timeout);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  const bool done = c10d::Work::wait();  // at once when completed; rethrows the op's error
  // Completed by now: this only makes the current streams wait for the events the future
  // recorded on the caller's stream.
  if (done && stream_) future_->wait();
  return done;
}

void TuttiWork::timed_out(std::chrono::milliseconds timeout) {
  const std::string waited = "wait(timeout=" + std::to_string(timeout.count()) + " ms) on rank " +
                             std::to_string(group_->rank()) + " of a group of " +
                             std::to_string(group_->size());
  const std::string state = started_ ? "the op was running, waiting for its peers"
                                     : "the op had not started: earlier operations of this group "
                                       "were still running";
  const bool aborted = group_->abort("rank " + std::to_string(group_->rank()) + "'s " +
                                     "wait(timeout=" + std::to_string(timeout.count()) +
                                     " ms) on " + label_ + " timed out");
  std::unique_lock lock(mutex_);
  const bool stopped = cv_.wait_for(lock, kStopAfterAbort, [this] { return completed_; });
  std::string what;
  if (!aborted)
    what = "the group was already destroyed";
  else if (stopped)
    what =
        "the group was aborted and the op has stopped: it will not write its output tensors "
        "any more (what they hold now is unspecified), and every pending and later operation "
        "on this group fails, on every rank";
  else
    what = "the group was aborted, but the op had not stopped " +
           std::to_string(kStopAfterAbort.count()) + " s later: it may still write its outputs";
  TORCH_CHECK(false, label_, ": Timed out (", waited, ": ", state, "; ", what, ")");
}

void TuttiWork::complete(std::exception_ptr error) {
  if (stream_ && !error) {
    device_done_.emplace(stream_->device_type());
    device_done_->record(*stream_);
  }
  // Work first (a thread in wait() may be the only one watching), then the future, whose
  // callbacks may take a while (DDP copies buckets back in them).
  finish(error);
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

}  // namespace tutti::torch_backend
