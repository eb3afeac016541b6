#include "comm/topology.hpp"

#include <algorithm>
#include <map>

namespace tutti::comm {

Topology topology_from_hosts(const std::vector<std::string>& host_ids, int rank) {
  Topology t;
  std::map<std::string, int> host_index;  // host id -> order of first appearance
  for (const auto& id : host_ids) host_index.try_emplace(id, static_cast<int>(host_index.size()));
  const std::string& mine = host_ids.at(rank);
  t.cross_size = static_cast<int>(host_index.size());
  t.cross_rank = host_index.at(mine);
  t.local_size = 0;
  t.local_rank = 0;
  for (int r = 0; r < static_cast<int>(host_ids.size()); ++r) {
    if (host_ids[r] != mine) continue;
    if (r < rank) ++t.local_rank;
    ++t.local_size;
  }
  return t;
}

collectives::CpuShare cpu_share_of_ranks(const std::vector<int>& host_of_rank,
                                         const std::vector<bootstrap::NodeCpus>& cpus,
                                         const std::vector<int>& host_cpus) {
  if (cpus.size() != host_of_rank.size()) return {};
  std::map<std::string, int> machine_index;
  std::vector<int> machine(cpus.size()), usable(cpus.size()), online(cpus.size());
  for (size_t r = 0; r < cpus.size(); ++r) {
    // An unknown machine is its host's alone ('/' cannot start a boot id).
    const std::string key =
        cpus[r].node.empty() ? "/" + std::to_string(host_of_rank[r]) : cpus[r].node;
    machine[r] =
        machine_index.try_emplace(key, static_cast<int>(machine_index.size())).first->second;
    online[r] = cpus[r].online;
  }
  for (size_t r = 0; r < cpus.size(); ++r) {
    const auto h = static_cast<size_t>(host_of_rank[r]);
    usable[r] = h < host_cpus.size() ? host_cpus[h] : 0;
  }
  return collectives::cpu_share_of(host_of_rank, machine, usable, online);
}

std::vector<int> host_cpus_of_ranks(const std::vector<int>& host_of_rank,
                                    const std::vector<bootstrap::NodeCpus>& cpus) {
  int hosts = 0;
  for (int h : host_of_rank) hosts = std::max(hosts, h + 1);
  std::vector<int> out(static_cast<size_t>(hosts), 0);
  if (cpus.size() != host_of_rank.size()) return out;
  std::vector<std::vector<bootstrap::NodeCpus>> of_host(out.size());
  for (size_t r = 0; r < cpus.size(); ++r)
    of_host[static_cast<size_t>(host_of_rank[r])].push_back(cpus[r]);
  for (size_t h = 0; h < out.size(); ++h) out[h] = bootstrap::shared_cpus(of_host[h]);
  return out;
}

std::vector<int> host_index_of_ranks(const std::vector<std::string>& host_ids) {
  std::map<std::string, int> host_index;
  std::vector<int> out;
  out.reserve(host_ids.size());
  for (const auto& id : host_ids)
    out.push_back(host_index.try_emplace(id, static_cast<int>(host_index.size())).first->second);
  return out;
}

}  // namespace tutti::comm
