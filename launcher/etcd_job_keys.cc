#include "launcher/etcd_job_keys.hpp"

#include <chrono>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::launcher {
namespace {

// The key the running tuttirun holds (on its lease) in the attempt's prefix.
constexpr const char* kHolder = "tuttirun";
// How long the job's end waits for etcd to remove its keys: an etcd that went away would
// otherwise hold tuttirun's exit for a whole request timeout, and the keys expire with their
// leases anyway.
constexpr std::chrono::seconds kClearAtEnd{2};

}  // namespace

EtcdJobKeys::EtcdJobKeys(const std::string& store_url, const std::string& job_id, int attempt) {
  bootstrap::EtcdAddress address = bootstrap::parse_etcd_address(store_url, "--store");
  address.prefix += fmt::format("/{}/a{}", job_id, attempt);
  url_ = bootstrap::etcd_url(address);
  store_ = std::make_unique<bootstrap::EtcdStore>(address, std::chrono::seconds(10),
                                                  std::chrono::seconds(10),
                                                  Deadline::after(std::chrono::seconds(30)));
  // Another tuttirun running this job id and attempt on the same etcd holds the prefix: clearing
  // it would pull that job's keys out from under its ranks. An earlier one's hold expires with it.
  if (store_->claim(kHolder, Deadline::after(std::chrono::seconds(30)),
                    fmt::format("tuttirun: an earlier run of job '{}' holds its keys", job_id)) ==
      bootstrap::EtcdStore::Claim::kHeld)
    throw make_error(ErrorCode::kConfig,
                     "another tuttirun runs job '{}' (attempt {}) with its keys in {}: give this "
                     "job its own --job-id, or another prefix in --store",
                     job_id, attempt, store_->describe());
  // Everything but the claim: a tuttirun that comes meanwhile still finds the prefix held.
  if (int64_t stale = store_->clear(kHolder); stale > 0)
    log::warn("tuttirun: removed {} keys an earlier job '{}' left in {}", stale, job_id,
              store_->describe());
}

EtcdJobKeys::~EtcdJobKeys() {
  try {
    const int64_t removed = store_->clear("", Deadline::after(kClearAtEnd));
    log::debug("tuttirun: removed the job's {} keys from {}", removed, store_->describe());
  } catch (const Error& e) {
    log::warn(
        "tuttirun: could not remove the job's keys from {} ({}); they expire with their "
        "leases",
        store_->describe(), e.what());
  }
}

}  // namespace tutti::launcher
