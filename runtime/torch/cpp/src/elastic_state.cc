// TorchState: a module's tensors and an optimizer's state as part of an elastic::State.
#include <c10/util/StringUtil.h>

#include "optimizer_bytes.hpp"
#include "tutti/torch_elastic.hpp"

namespace tutti::torchx {

TorchState::TorchState(torch::nn::Module& model, torch::optim::Optimizer& optimizer)
    : model_(model), optimizer_(optimizer) {
  for (const auto& item : model_.named_parameters()) tensors_.push_back(item.value());
  for (const auto& item : model_.named_buffers()) tensors_.push_back(item.value());
}

void TorchState::snapshot() {
  torch::NoGradGuard no_grad;
  saved_tensors_.clear();
  for (const auto& t : tensors_) saved_tensors_.push_back(t.detach().clone());
  saved_optimizer_ = save_optimizer(optimizer_);
  saved_ = true;
}

void TorchState::commit() {
  snapshot();
  State::commit();
}

void TorchState::restore() {
  if (!saved_)
    throw Error(ErrorCode::kInvalidArgument,
                "tutti::torchx::TorchState::restore: nothing was committed yet; commit() the "
                "starting state first");
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < tensors_.size(); ++i) tensors_[i].copy_(saved_tensors_[i]);
  }
  load_optimizer(optimizer_, saved_optimizer_);
  State::restore();
}

void TorchState::sync(const Communicator& comm, int root) {
  broadcast_parameters(model_, root, comm);
  broadcast_optimizer_state(optimizer_, root, comm);
  State::sync(comm, root);
  snapshot();
}

}  // namespace tutti::torchx
