// torch's c10d::Store seen as a tutti::Store: the process group's communicator meets its peers
// through the (prefix) store that torch.distributed hands to the backend's creator, so tutti needs
// no rendezvous of its own under torchrun, init_method=file:// or tcp://.
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "tutti/store.hpp"

namespace tutti::torch_backend {

class C10dStore final : public tutti::Store {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool remove(const std::string& key) override;
  std::string describe() const override { return "torch.distributed's store"; }

 private:
  // c10d stores are thread-safe themselves (TCPStore and FileStore lock per operation).
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace tutti::torch_backend
