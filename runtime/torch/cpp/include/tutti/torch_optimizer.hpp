// DistributedOptimizer: Horovod's data-parallel optimizer for libtorch C++.
//
//   torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01));
//   tutti::torchx::DistributedOptimizer optimizer(sgd, model->named_parameters());
//   tutti::torchx::broadcast_parameters(*model, 0);
//   for (auto& batch : shard) {
//     optimizer.zero_grad();
//     loss_fn(model->forward(batch.data), batch.target).backward();  // gradients leave now
//     optimizer.step();  // waits for the averaged gradients, then sgd.step()
//   }
//
// Each parameter's gradient is enqueued on tutti's engine (allreduce_async, averaged over the
// ranks) from a post hook on the parameter's gradient accumulator, the autograd node that writes
// param.grad(): the hook runs right after the accumulation, so it sees the final .grad of this
// backward pass (a Tensor::register_hook hook runs before it, on the incoming gradient only,
// which is not .grad once gradients accumulate) and it runs while autograd is still producing
// the gradients of earlier layers, so communication overlaps the rest of the backward pass.
#pragma once

#include <memory>
#include <string>

#include "tutti/torch_ops.hpp"

namespace tutti::torchx {

// What gradients travel as on the wire. Half types halve the bytes; each gradient is cast before
// the allreduce and cast back into param.grad() after it (so the optimizer sees its own dtype).
enum class Compression { kNone, kFloat16, kBFloat16 };

struct DistributedOptimizerOptions {
  // Backward passes whose gradients accumulate locally before they are allreduced: the hook
  // enqueues a gradient on its k-th pass; step() comes after the k-th backward pass.
  int backward_passes_per_step = 1;
  // With backward_passes_per_step > 1: divide the accumulated gradient by k as well (the mean over
  // passes as well as over ranks). Off, as in Horovod: the sum over passes, averaged over ranks.
  bool average_aggregated_gradients = false;
  Compression compression = Compression::kNone;
  // Engine names are prefix + the parameter's name (or "param.<index>" for a parameter that is not
  // in the named list). Two DistributedOptimizers on one communicator need different prefixes.
  std::string name_prefix = "grad.";
};

class TUTTI_TORCH_API DistributedOptimizer {
 public:
  // Wraps `optimizer` (which must outlive this) and hooks every parameter of its param groups
  // that requires grad. `named_parameters` (module->named_parameters()) gives them their engine
  // names; every rank must build the same optimizer over the same parameters.
  DistributedOptimizer(torch::optim::Optimizer& optimizer,
                       const torch::OrderedDict<std::string, torch::Tensor>& named_parameters =
                           torch::OrderedDict<std::string, torch::Tensor>(),
                       DistributedOptimizerOptions options = {},
                       const Communicator& comm = world());
  // Waits for gradients still in flight (their buffers must outlive the engine's use), removes
  // the hooks.
  ~DistributedOptimizer();
  DistributedOptimizer(DistributedOptimizer&&) noexcept;
  DistributedOptimizer& operator=(DistributedOptimizer&&) noexcept;

  // Enqueues what the hooks have not (a parameter that got no gradient this step, as zeros; one
  // with fewer than k passes), waits for every allreduce and writes the averaged gradients into
  // param.grad(). Throws the engine's error (a rank that enqueued something else, a stall, a dead
  // rank): ranks that disagree fail, they never hang.
  void synchronize();
  // synchronize(), then the wrapped optimizer's step().
  void step();
  // The wrapped optimizer's zero_grad(). Error(kInvalidArgument) while gradients are in flight
  // (after backward(), before step()): zeroing them under the allreduce would corrupt them.
  void zero_grad();

  torch::optim::Optimizer& wrapped();
  const DistributedOptimizerOptions& options() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tutti::torchx
