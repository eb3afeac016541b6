// The handle torch.distributed gets back from every operation of a ProcessGroupTutti. It completes
// on the group's worker thread, both as a c10d::Work (wait(), isCompleted(), exception()) and as a
// c10::ivalue::Future holding the output tensors: DDP's reducer calls allreduce(...)->getFuture()
// and chains its bucket handling onto it, and torch's base Work has no future to give.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/ivalue_inl.h>
#include <c10/core/Stream.h>

#include <exception>
#include <optional>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace tutti::torch_backend {

class TuttiWork final : public c10d::Work {
 public:
  // `stream`: the caller's stream of an op on CUDA tensors; the future is then one of its device,
  // so that what waits on it or runs after it waits for the results on the device too.
  TuttiWork(int rank, c10d::OpType type, const char* profiling_title,
            std::vector<at::Tensor> outputs, const std::optional<c10::Stream>& stream = {});

  // Work::wait, and for CUDA tensors the current stream of their device then waits for the op's
  // last work on the caller's stream (the copies back into the outputs), as NCCL's Work does.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Called once, on the worker thread (with the caller's stream current for CUDA tensors): wakes
  // wait() and completes the future (running the callbacks chained on it) with the outputs, or
  // with `error`.
  void complete(std::exception_ptr error = nullptr);

 private:
  std::vector<at::Tensor> outputs_;
  bool on_device_ = false;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace tutti::torch_backend
