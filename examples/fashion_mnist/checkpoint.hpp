// What a checkpoint holds: model, optimizer, epoch and step, as one torch archive (the payload
// of a checkpoint file; see checkpoint_file.hpp for the framing and the atomic write).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace fashion_mnist {

struct Progress {
  int64_t epoch = 0;  // the epoch the next step belongs to (0-based)
  int64_t step = 0;   // optimizer steps done so far, over all epochs
};

std::string save_training_state(const torch::nn::Module& model,
                                const torch::optim::Optimizer& optimizer, Progress progress);
// Loads into `model` and `optimizer` (their parameters keep their identity: the storage is
// replaced). Throws when the payload is not such an archive or does not fit the model.
Progress load_training_state(const std::string& payload, torch::nn::Module& model,
                             torch::optim::Optimizer& optimizer);

}  // namespace fashion_mnist
