#include "collectives/hierarchy.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace tutti::collectives {

Hierarchy hierarchy_of(std::span<const int> host_of_rank, int rank) {
  const int size = static_cast<int>(host_of_rank.size());
  if (rank < 0 || rank >= size)
    throw make_error(ErrorCode::kInternal,
                     "rank {} has no host in a placement of {} ranks; the communicator must give "
                     "every rank's host",
                     rank, size);
  Hierarchy h;
  std::map<int, int> count_per_host;
  std::map<int, int> leader_of_host;
  for (int r = 0; r < size; ++r) {
    const int host = host_of_rank[r];
    ++count_per_host[host];
    leader_of_host.try_emplace(host, r);
    if (host == host_of_rank[rank]) {
      if (r == rank) h.local_index = static_cast<int>(h.local.size());
      h.local.push_back(r);
    }
  }
  for (const auto& [host, leader] : leader_of_host) h.leaders.push_back(leader);
  // Hosts in order of their lowest rank, as the communicator numbers them.
  std::sort(h.leaders.begin(), h.leaders.end());
  for (size_t i = 0; i < h.leaders.size(); ++i)
    if (h.leaders[i] == rank) h.leader_index = static_cast<int>(i);
  for (const auto& [host, n] : count_per_host) {
    h.max_local = std::max(h.max_local, n);
    if (n != count_per_host.begin()->second) h.uniform = false;
  }
  return h;
}

}  // namespace tutti::collectives
