// How many CPUs this process may run on and which machine (kernel) it runs on: what every rank
// announces at init beside its host id, so that the cost model can see ranks of several hosts
// (pods, containers) sharing one machine's CPUs (collectives/cpu_share.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::bootstrap {

struct NodeCpus {
  int usable = 0;    // CPUs this process may use: its affinity mask, capped by a cgroup CPU quota
  int online = 0;    // CPUs of the machine (sysconf), which a container still sees in full
  std::string node;  // the kernel's boot id: equal on every pod or container of one machine
  // Which CPUs: the affinity mask, 64 CPUs a word, CPU 0 in word 0's lowest bit (empty: unknown,
  // as from a process of an older build). mpirun binds each rank to a core by default, so a
  // rank's own count says 1 while the ranks of its host have a CPU each between them.
  std::vector<uint64_t> mask;
  int quota = 0;  // the cgroup's CPU quota in CPUs, rounded up (0: none or unknown)
};

// How many CPUs the ranks of one host (one shared-memory domain) may run on together: the union
// of their affinity masks, capped by the smallest cgroup quota among them. Where a rank's mask is
// unknown, the largest `usable` among them (what each rank alone may use); 0 when nothing is known.
int shared_cpus(std::span<const NodeCpus> ranks);

// This process's, read now. A part that cannot be read stays 0 (or empty): unknown.
NodeCpus node_cpus_here();

// A cgroup v2 `cpu.max` ("max 100000" or "<quota> <period>") or v1 cfs quota and period as CPUs,
// rounded up; 0 for no limit or text that is not a quota.
int cpus_of_quota(std::string_view cpu_max);

// "<usable> <online> <node> <mask> <quota>" (mask: hex words, lowest first, joined by ','; "-"
// when unknown), and back; the three-field form of older builds parses with no mask (nullopt for
// text of another form).
std::string to_string(const NodeCpus& cpus);
std::optional<NodeCpus> parse_node_cpus(std::string_view text);

}  // namespace tutti::bootstrap
