// The handle torch.distributed gets back from every operation of a ProcessGroupTutti. It completes
// on the group's worker thread, both as a c10d::Work (wait(), isCompleted(), exception()) and as a
// c10::ivalue::Future holding the output tensors: DDP's reducer calls allreduce(...)->getFuture()
// and chains its bucket handling onto it, and torch's base Work has no future to give.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/ivalue_inl.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "tutti/tutti.hpp"

namespace tutti::torch_backend {

// A group's communicator as its Works see it: a Work may outlive its group (Python keeps it), and
// a wait() that times out aborts the group through this. The group detaches it when it goes.
class GroupLink {
 public:
  GroupLink(const tutti::Communicator& comm, int rank, int size)
      : comm_(&comm), rank_(rank), size_(size) {}
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Aborts the communicator (every pending and later call fails on every rank, naming `reason`);
  // false when the group is already gone.
  bool abort(const std::string& reason);
  void detach();

 private:
  std::mutex mutex_;
  const tutti::Communicator* comm_;  // null once detached
  int rank_;
  int size_;
};

class TuttiWork final : public c10d::Work {
 public:
  // `label` names the op in errors ("tutti allreduce of float32[10]"). `stream`: the caller's
  // stream of an op on CUDA tensors; the future is then one of its device, so that what waits on
  // it or runs after it waits for the results on the device too.
  TuttiWork(std::shared_ptr<GroupLink> group, c10d::OpType type, const char* profiling_title,
            std::string label, std::vector<at::Tensor> outputs,
            const std::optional<c10::Stream>& stream = {});

  // Work::wait, and for CUDA tensors the current stream of their device then waits for the op's
  // last work on the caller's stream (the copies back into the outputs), as NCCL's Work does;
  // with a timeout the host also waits for that work, as NCCL's. With a timeout that passes first,
  // the group is aborted and wait() returns (throwing an error that names the op, this rank and the
  // timeout) only once the op has stopped: it never writes its outputs afterwards, and every rank's
  // pending and later ops on the group fail.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;

  // Whether the op is done: for CUDA tensors, once its device work completed too (an event after
  // it on the caller's stream), as NCCL's Work says.
  bool isCompleted() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // On the worker thread, when the op starts running (before that it is queued behind others).
  void start() { started_ = true; }

  // Called once, on the worker thread (with the caller's stream current for CUDA tensors): wakes
  // wait() and completes the future (running the callbacks chained on it) with the outputs, or
  // with `error`.
  void complete(std::exception_ptr error = nullptr);

 private:
  [[noreturn]] void timed_out(std::chrono::milliseconds timeout);

  std::shared_ptr<GroupLink> group_;
  std::string label_;
  std::vector<at::Tensor> outputs_;
  std::optional<c10::Stream> stream_;  // the caller's, for an op on CUDA tensors
  // Recorded on the caller's stream after the op's work (CUDA ops complete once enqueued).
  std::optional<c10::Event> device_done_;
  std::atomic<bool> started_{false};
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace tutti::torch_backend
