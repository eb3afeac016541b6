// Elastic training of a libtorch model (docs/ELASTIC.md): tutti::elastic::State for a module and
// its optimizer, as Horovod's TorchState. Run by tutti::elastic::run, it rolls the model, the
// optimizer (momentum, Adam's moments, the learning rate) and any plain buffers added to it back to
// the last commit when ranks die, and gives them from rank 0 to ranks that join.
//
//   Net model;  torch::optim::SGD opt(model->parameters(), SGDOptions(0.05).momentum(0.9));
//   int64_t step = 0;
//   tutti::torchx::TorchState state(*model, opt);
//   state.add("step", std::span<int64_t>(&step, 1));
//   state.commit();
//   tutti::elastic::run(world.communicator(), state, [&](const tutti::Communicator& comm) {
//     for (; step < steps; ++step) {
//       ... loss.backward(); tutti::torchx::allreduce_(grad, comm, kAvg) for each grad ...
//       opt.step();
//       if (step % 10 == 0) state.commit();
//     }
//   });
#pragma once

#include <string>
#include <vector>

#include "tutti/elastic.hpp"
#include "tutti/torch_state.hpp"

namespace tutti::torchx {

class TUTTI_TORCH_API TorchState : public tutti::elastic::State {
 public:
  // Both must outlive the state and keep their parameters (the same tensors, in the same order).
  TorchState(torch::nn::Module& model, torch::optim::Optimizer& optimizer);

  // Copies the module's parameters and buffers and the optimizer's whole state, then the plain
  // buffers (State::commit: inside run() it may throw MembershipChanged, after the copies).
  void commit() override;
  // Loads the last commit back into the module and the optimizer, then the plain buffers.
  // Error(kInvalidArgument) before any commit.
  void restore() override;
  // Every rank's module and optimizer become root's (broadcast_parameters,
  // broadcast_optimizer_state), then the plain buffers (State::sync); what sync gives counts as
  // the last commit.
  void sync(const Communicator& comm, int root = 0) override;

 private:
  void snapshot();

  torch::nn::Module& model_;
  torch::optim::Optimizer& optimizer_;
  std::vector<torch::Tensor> tensors_;  // the module's parameters, then its buffers
  std::vector<torch::Tensor> saved_tensors_;
  std::string saved_optimizer_;
  bool saved_ = false;
};

}  // namespace tutti::torchx
