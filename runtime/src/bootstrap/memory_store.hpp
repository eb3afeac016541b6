// MemoryStore: a Store inside one process, for tests that run ranks as threads.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "bootstrap/store.hpp"

namespace tutti::bootstrap {

class MemoryStore : public Store {
 public:
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<std::string> missing(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool remove(const std::string& key) override;
  std::string describe() const override { return "memory"; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

}  // namespace tutti::bootstrap
