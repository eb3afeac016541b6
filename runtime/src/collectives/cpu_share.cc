#include "collectives/cpu_share.hpp"

#include <algorithm>
#include <vector>

namespace tutti::collectives {

CpuShare cpu_share_of(std::span<const int> host_of_rank, std::span<const int> machine_of_rank,
                      std::span<const int> usable_cpus, std::span<const int> machine_cpus) {
  const size_t n = host_of_rank.size();
  CpuShare share;
  if (n == 0 || machine_of_rank.size() != n || usable_cpus.size() != n || machine_cpus.size() != n)
    return share;
  const int hosts = *std::max_element(host_of_rank.begin(), host_of_rank.end()) + 1;
  const int machines = *std::max_element(machine_of_rank.begin(), machine_of_rank.end()) + 1;
  std::vector<int> host_ranks(static_cast<size_t>(hosts), 0);
  std::vector<int> host_cpus(static_cast<size_t>(hosts), 0);
  std::vector<int> host_machine(static_cast<size_t>(hosts), 0);
  std::vector<int> machine_ranks(static_cast<size_t>(machines), 0);
  std::vector<int> machine_online(static_cast<size_t>(machines), 0);
  for (size_t r = 0; r < n; ++r) {
    const auto h = static_cast<size_t>(host_of_rank[r]);
    const auto m = static_cast<size_t>(machine_of_rank[r]);
    ++host_ranks[h];
    host_cpus[h] = std::max(host_cpus[h], usable_cpus[r]);
    host_machine[h] = static_cast<int>(m);
    ++machine_ranks[m];
    machine_online[m] = std::max(machine_online[m], machine_cpus[r]);
  }
  // A machine's CPUs: its own count, but no more than its hosts may use between them (pods with
  // CPU limits on a large node); unknown when either is.
  std::vector<long> machine_hosts_cpus(static_cast<size_t>(machines), 0);
  std::vector<bool> machine_unknown(static_cast<size_t>(machines), false);
  std::vector<int> machine_hosts(static_cast<size_t>(machines), 0);
  for (size_t h = 0; h < static_cast<size_t>(hosts); ++h) {
    if (host_ranks[h] == 0) continue;
    const auto m = static_cast<size_t>(host_machine[h]);
    ++machine_hosts[m];
    if (host_cpus[h] <= 0) machine_unknown[m] = true;
    machine_hosts_cpus[m] += host_cpus[h];
    if (host_cpus[h] > 0)
      share.ranks = std::max(share.ranks, static_cast<double>(host_ranks[h]) / host_cpus[h]);
  }
  for (size_t m = 0; m < static_cast<size_t>(machines); ++m) {
    if (machine_ranks[m] == 0 || machine_online[m] <= 0) continue;
    double cpus = machine_online[m];
    if (!machine_unknown[m]) cpus = std::min(cpus, static_cast<double>(machine_hosts_cpus[m]));
    share.ranks = std::max(share.ranks, machine_ranks[m] / cpus);
    share.leaders = std::max(share.leaders, machine_hosts[m] / cpus);
  }
  return share;
}

}  // namespace tutti::collectives
