// SharedStore: the store of a job as every communicator of the process uses it, maybe from several
// threads at once. Calls are serialized (a TcpStore connection carries one request at a time), and
// blocking waits hold the lock only for short slices, so a thread waiting for peers that are slow
// to create their communicator never keeps another thread from publishing what its own peers wait
// for.
#pragma once

#include <memory>
#include <mutex>

#include "bootstrap/store.hpp"

namespace tutti::comm {

class SharedStore final : public bootstrap::Store {
 public:
  explicit SharedStore(std::unique_ptr<bootstrap::Store> inner) : inner_(std::move(inner)) {}

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<std::string> missing(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool remove(const std::string& key) override;
  std::string describe() const override { return inner_->describe(); }

 private:
  std::mutex mutex_;
  std::unique_ptr<bootstrap::Store> inner_;
};

}  // namespace tutti::comm
