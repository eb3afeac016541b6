#include "checkpoint.hpp"

namespace fashion_mnist {

std::string save_training_state(const torch::nn::Module& model,
                                const torch::optim::Optimizer& optimizer, Progress progress) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epoch", torch::tensor(progress.epoch));
  archive.write("step", torch::tensor(progress.step));
  std::string bytes;
  archive.save_to([&bytes](const void* data, size_t n) {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  return bytes;
}

Progress load_training_state(const std::string& payload, torch::nn::Module& model,
                             torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive archive;
  archive.load_from(payload.data(), payload.size());
  torch::serialize::InputArchive model_archive;
  archive.read("model", model_archive);
  model.load(model_archive);
  torch::serialize::InputArchive optimizer_archive;
  archive.read("optimizer", optimizer_archive);
  optimizer.state().clear();
  optimizer.load(optimizer_archive);
  torch::Tensor epoch, step;
  archive.read("epoch", epoch);
  archive.read("step", step);
  return {epoch.item<int64_t>(), step.item<int64_t>()};
}

}  // namespace fashion_mnist
