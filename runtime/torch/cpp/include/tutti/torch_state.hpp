// Making every rank start from root's model and optimizer (Horovod's broadcast_parameters and
// broadcast_optimizer_state), on libtorch 1.13's C++ API.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tutti/torch_ops.hpp"

namespace tutti::torchx {

// Every rank's tensors become root's, in the order given. The ranks must pass the same list
// (names, shapes, dtypes): a fingerprint of it is compared first, and a rank whose list differs
// makes every rank fail with Error(kMismatch) instead of exchanging mismatched bytes.
TUTTI_TORCH_API void broadcast_parameters(
    const std::vector<std::pair<std::string, torch::Tensor>>& named_tensors, int root,
    const Communicator& comm = world());
// The module's parameters and buffers (batch-norm statistics, ...), by their qualified names.
TUTTI_TORCH_API void broadcast_parameters(const torch::nn::Module& module, int root,
                                          const Communicator& comm = world());

// Every rank's optimizer takes root's state and hyper-parameters (learning rate, momentum, ...).
// Root serializes its optimizer with the optimizer's own save() (the per-parameter state, keyed
// by the parameter's position in the param groups, and each group's options); the bytes are
// broadcast and every other rank clears its state and load()s them. So state that root has not
// created yet (SGD's momentum buffers before the first step, Adam's exp_avg) is absent on every
// rank afterwards, and the first step creates it the same way everywhere from equal parameters;
// state that exists on root is created on the others with root's values. Works for every
// optimizer that implements save()/load() (all of torch::optim); root's failure to serialize is
// reported on every rank, never a hang.
TUTTI_TORCH_API void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root,
                                               const Communicator& comm = world());

}  // namespace tutti::torchx
