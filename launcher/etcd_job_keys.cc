#include "launcher/etcd_job_keys.hpp"

#include <chrono>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::launcher {

EtcdJobKeys::EtcdJobKeys(const std::string& store_url, const std::string& job_id, int attempt) {
  bootstrap::EtcdAddress address = bootstrap::parse_etcd_address(store_url, "--store");
  address.prefix += fmt::format("/{}/a{}", job_id, attempt);
  url_ = bootstrap::etcd_url(address);
  store_ = std::make_unique<bootstrap::EtcdStore>(address, std::chrono::seconds(10),
                                                  std::chrono::seconds(10),
                                                  Deadline::after(std::chrono::seconds(30)));
  if (int64_t stale = store_->clear(); stale > 0)
    log::warn("tuttirun: removed {} keys an earlier job '{}' left in {}", stale, job_id,
              store_->describe());
}

EtcdJobKeys::~EtcdJobKeys() {
  try {
    const int64_t removed = store_->clear();
    log::debug("tuttirun: removed the job's {} keys from {}", removed, store_->describe());
  } catch (const Error& e) {
    log::warn(
        "tuttirun: could not remove the job's keys from {} ({}); they expire with their "
        "leases",
        store_->describe(), e.what());
  }
}

}  // namespace tutti::launcher
