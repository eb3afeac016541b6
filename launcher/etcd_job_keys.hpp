// tuttirun --store etcd://...: the job's keys live in etcd under PREFIX/JOB-ID/aATTEMPT, so every
// attempt of a restarted job starts from an empty key space (no waiting for a killed attempt's
// keys to expire) and nothing stays behind: the keys are removed when the attempt ends.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/etcd_store.hpp"

namespace tutti::launcher {

class EtcdJobKeys {
 public:
  // Reaches etcd (Error(kTimeout) after 30 s naming it) and clears the attempt's prefix: a job id
  // used before may have left keys there.
  EtcdJobKeys(const std::string& store_url, const std::string& job_id, int attempt);
  ~EtcdJobKeys();
  EtcdJobKeys(const EtcdJobKeys&) = delete;
  EtcdJobKeys& operator=(const EtcdJobKeys&) = delete;

  // TUTTI_STORE for the attempt's ranks.
  const std::string& url() const { return url_; }
  // tuttirun's own handle on it (elastic membership keys).
  bootstrap::Store& store() { return *store_; }

 private:
  std::string url_;
  std::unique_ptr<bootstrap::EtcdStore> store_;
};

}  // namespace tutti::launcher
