#include "transport/mesh_rendezvous.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::transport {

bool uses_shm(const MeshConfig& config, int a, int b) {
  switch (config.options.transport) {
    case TransportKind::kShm:
      return true;
    case TransportKind::kTcp:
    case TransportKind::kMpi:
      return false;
    case TransportKind::kAuto:
      return config.host_ids[a] == config.host_ids[b];
  }
  return false;
}

std::string MeshContext::key(std::string_view kind, int rank) const {
  return fmt::format("{}/{}/{}", config.job_id, kind, rank);
}

namespace {
constexpr std::string_view kFailedPrefix = "failed: ";
}  // namespace

void MeshContext::publish_failure(std::string_view kind, int rank, std::string_view why) const {
  try {
    store.set(key(kind, rank), fmt::format("{}{}", kFailedPrefix, why));
  } catch (const Error& e) {
    log::debug("rank {}: could not tell the peers why ({}): {}", config.rank, why, e.what());
  }
}

std::optional<std::string_view> MeshContext::published_failure(std::string_view value) {
  if (!value.starts_with(kFailedPrefix)) return std::nullopt;
  return value.substr(kFailedPrefix.size());
}

void MeshContext::throw_missing(const std::vector<int>& ranks, std::string_view action,
                                std::string_view where) const {
  // Joined by hand: fmt::join's element formatter trips a false -Wstringop-overflow in GCC 12 at
  // -O3 with the sanitizers (the dev preset).
  std::string listed;
  for (int r : ranks) listed += (listed.empty() ? "" : ", ") + std::to_string(r);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  throw make_error(
      ErrorCode::kTimeout,
      "rank {} timed out after {:.1f} s waiting for rank{} {} (of {}) to {}; are they "
      "running and reachable at {}? (raise TUTTI_TIMEOUT if they are only slow to start)",
      config.rank, waited, ranks.size() == 1 ? "" : "s", listed, config.size, action, where);
}

void MeshContext::wait_for(std::string_view kind, const std::vector<int>& ranks,
                           std::string_view action, std::string_view where) const {
  std::vector<std::string> keys;
  for (int r : ranks) keys.push_back(key(kind, r));
  wait_for(ranks, keys, action, where);
}

void MeshContext::wait_for(const std::vector<int>& ranks, const std::vector<std::string>& keys,
                           std::string_view action, std::string_view where) const {
  const auto missing_ranks = [&] {
    std::vector<std::string> missing = store.missing(keys);
    std::vector<int> out;
    for (size_t i = 0; i < keys.size(); ++i)
      if (std::find(missing.begin(), missing.end(), keys[i]) != missing.end())
        out.push_back(ranks[i]);
    return out;
  };
  for (;;) {
    // With a watch, the store is asked in slices and the watch looks between them.
    const Deadline slice = watch ? Deadline::after(kWatchSlice).earlier(deadline) : deadline;
    try {
      store.wait(keys, slice);
      return;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout) throw;
      std::vector<int> missing = missing_ranks();
      if (missing.empty()) {
        if (deadline.expired()) throw;
        continue;  // they came as the slice ended
      }
      if (deadline.expired()) throw_missing(missing, action, where);
      watch(missing);
    }
  }
}

}  // namespace tutti::transport
