// An optimizer's whole state (per-parameter state and each group's options) as bytes and back, with
// the optimizer's own save() and load(): what broadcast_optimizer_state sends and TorchState keeps.
#pragma once

#include <torch/torch.h>

#include <string>

namespace tutti::torchx {

std::string save_optimizer(torch::optim::Optimizer& optimizer);
// Clears the optimizer's state first: what the bytes lack must be absent. c10::Error when the bytes
// do not fit the optimizer.
void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes);

}  // namespace tutti::torchx
