// What connect_mesh's TCP and shared-memory halves share: the store keys (namespaced by job id),
// and waiting for a set of ranks with an error that names exactly the ranks that never came.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/store.hpp"
#include "core/deadline.hpp"
#include "transport/mesh.hpp"

namespace tutti::transport {

// Whether ranks a and b talk through shared memory (the same answer on both sides).
bool uses_shm(const MeshConfig& config, int a, int b);

struct MeshContext {
  const MeshConfig& config;
  bootstrap::Store& store;
  Deadline deadline;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  // Called every kWatchSlice of a wait with the ranks still awaited, when set: throws to end the
  // wait (an abort of this communicator, a peer's abort notice, an awaited peer that died). The
  // shared-memory window is built inside a collective, where a wait that saw none of these held
  // a rank for the whole TUTTI_TIMEOUT after its peers had failed.
  std::function<void(std::span<const int>)> watch = nullptr;
  static constexpr std::chrono::milliseconds kWatchSlice{50};

  std::string key(std::string_view kind, int rank) const;  // "<job>/<kind>/<rank>"

  // Puts "failed: <why>" under key(kind, rank), where the peers wait for this rank's endpoint, so
  // they fail at once with the reason instead of at their deadline. Best effort: the store may be
  // what failed, and the caller's own error must not be masked by that.
  void publish_failure(std::string_view kind, int rank, std::string_view why) const;
  // The reason under a value publish_failure wrote, or nullopt for any other value.
  static std::optional<std::string_view> published_failure(std::string_view value);
  std::string host(int rank) const { return config.host_ids[rank]; }

  // Error(kTimeout): "rank R timed out after N s waiting for ranks 3, 5 (of 8) to <action>; are
  // they running and reachable at <where>?"
  [[noreturn]] void throw_missing(const std::vector<int>& ranks, std::string_view action,
                                  std::string_view where) const;

  // Waits until keys[i] (the key of ranks[i]) all exist; on timeout throws as throw_missing.
  void wait_for(const std::vector<int>& ranks, const std::vector<std::string>& keys,
                std::string_view action, std::string_view where) const;
  // The same for key(kind, r) of every r in ranks.
  void wait_for(std::string_view kind, const std::vector<int>& ranks, std::string_view action,
                std::string_view where) const;
};

}  // namespace tutti::transport
