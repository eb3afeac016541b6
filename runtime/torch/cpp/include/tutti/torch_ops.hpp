// tutti collectives on torch::Tensor (CPU), blocking and asynchronous, on tutti's public API.
//
//   tutti::World world;
//   torch::Tensor t = torch::ones({4, 3});
//   tutti::torchx::allreduce_(t, tutti::ReduceOp::kAvg);                 // in place, blocking
//   auto work = tutti::torchx::allreduce_async("grad.fc", t, tutti::ReduceOp::kSum);
//   torch::Tensor summed = work.wait();                                  // t itself, reduced
//
// The namespace is tutti::torchx rather than tutti::torch: a tutti::torch would shadow ::torch
// inside namespace tutti, so every `torch::Tensor` written there (ours and our users') would need
// a leading `::`.
//
// Tensors must live on the CPU with a strided layout. A non-contiguous tensor works: it is
// reduced through a contiguous copy that is written back when the call (or wait()) returns.
// Every torch dtype that tutti has is accepted (float32/64, float16, bfloat16, int8/16/32/64,
// uint8, bool); any other (complex, quantized, ...) is refused with Error(kInvalidArgument)
// naming the tensor.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tutti/tutti.hpp"

#define TUTTI_TORCH_API __attribute__((visibility("default")))

namespace tutti::torchx {

// The tutti element type of `type`; Error(kInvalidArgument) naming `what` (a tensor's name or
// description) when tutti has none.
// tutti's twin of a torch dtype, or nullopt when tutti does not carry it.
TUTTI_TORCH_API std::optional<DataType> maybe_tutti(c10::ScalarType type);
TUTTI_TORCH_API DataType to_tutti(c10::ScalarType type, std::string_view what = "tensor");
// Throws Error(kInvalidArgument) naming `what` unless `tensor` is a defined, strided CPU tensor
// of a dtype tutti has.
TUTTI_TORCH_API void check_tensor(const torch::Tensor& tensor, std::string_view what);

// Blocking, in place: every rank passes a tensor of the same shape and dtype.
TUTTI_TORCH_API void allreduce_(torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum,
                                const Communicator& comm = world());
TUTTI_TORCH_API void broadcast_(torch::Tensor& tensor, int root,
                                const Communicator& comm = world());
// Every rank's tensor concatenated along dimension 0, in rank order. The ranks' tensors must
// agree in dtype and in every dimension but the first (which may differ, even be 0).
TUTTI_TORCH_API torch::Tensor allgather(const torch::Tensor& tensor,
                                        const Communicator& comm = world());

// An asynchronous operation on tensors: the engine runs it in the background. The tensors given
// must stay unchanged (and are kept alive) until wait() returns.
class TUTTI_TORCH_API Work {
 public:
  Work() = default;
  Work(Handle handle, std::function<torch::Tensor()> finish);

  // True once the engine finished it (wait() then returns without blocking).
  bool poll() const { return handle_.poll(); }
  // Waits, writes results back (non-contiguous tensors) and returns the result: the reduced or
  // broadcast tensor itself, or the gathered tensor. Throws the engine's error (a mismatch
  // between ranks, a stall, a dead rank). A second wait() returns the same tensor.
  torch::Tensor wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  const Handle& handle() const { return handle_; }

 private:
  Handle handle_;
  std::function<torch::Tensor()> finish_;
  std::optional<torch::Tensor> result_;
};

// Asynchronous, by name (tutti's engine: every rank must enqueue the same name; ranks may do so
// in different orders). `options` carries prescale/postscale.
TUTTI_TORCH_API Work allreduce_async(const std::string& name, torch::Tensor tensor,
                                     ReduceOp op = ReduceOp::kSum, const AsyncOptions& options = {},
                                     const Communicator& comm = world());
TUTTI_TORCH_API Work broadcast_async(const std::string& name, torch::Tensor tensor, int root,
                                     const Communicator& comm = world());
TUTTI_TORCH_API Work allgather_async(const std::string& name, const torch::Tensor& tensor,
                                     const Communicator& comm = world());

}  // namespace tutti::torchx
