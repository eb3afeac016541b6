// The trainer's models: a small CNN (the demo) and an MLP (fast enough for the tests on 2 cores).
#pragma once

#include <torch/torch.h>

#include <string>

namespace fashion_mnist {

// "cnn": conv 5x5 (16) - pool - conv 5x5 (32) - pool - fc 128 - fc 10.
// "mlp": fc 128 - fc 10. Both take N x 1 x 28 x 28 and return logits N x 10.
// Throws tutti::Error(kInvalidArgument) for another name.
torch::nn::Sequential make_model(const std::string& kind);

}  // namespace fashion_mnist
