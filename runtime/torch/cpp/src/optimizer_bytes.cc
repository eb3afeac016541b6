#include "optimizer_bytes.hpp"

namespace tutti::torchx {
namespace {

// libtorch 1.13's Optimizer::load() restores the state but keeps this optimizer's own options;
// Horovod's semantics take root's hyper-parameters too. The options sit in the archive that save()
// wrote, per group, and each group's OptimizerOptions reads its own kind through its virtual
// serialize().
void load_group_options(torch::serialize::InputArchive& archive,
                        torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive groups;
  archive.read("param_groups", groups);
  for (size_t i = 0; i < optimizer.param_groups().size(); ++i) {
    torch::serialize::InputArchive group, options;
    groups.read("param_groups/" + std::to_string(i), group);
    group.read("options", options);
    optimizer.param_groups()[i].options().serialize(options);
  }
}

}  // namespace

std::string save_optimizer(torch::optim::Optimizer& optimizer) {
  std::string bytes;
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.save_to([&bytes](const void* data, size_t n) {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  return bytes;
}

void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  optimizer.state().clear();
  optimizer.load(archive);
  load_group_options(archive, optimizer);
}

}  // namespace tutti::torchx
