#include "model.hpp"

#include "tutti/error.hpp"

namespace fashion_mnist {

namespace nn = torch::nn;

torch::nn::Sequential make_model(const std::string& kind) {
  if (kind == "cnn")
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 5).padding(2)), nn::ReLU(),
                          nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(16, 32, 5).padding(2)),
                          nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(32 * 7 * 7, 128),
                          nn::ReLU(), nn::Linear(128, 10));
  if (kind == "mlp")
    return nn::Sequential(nn::Flatten(), nn::Linear(28 * 28, 128), nn::ReLU(), nn::Linear(128, 10));
  throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                     "fashion_mnist: --model must be cnn or mlp, not '" + kind + "'");
}

}  // namespace fashion_mnist
