#include "bootstrap/node_cpus.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace tutti::bootstrap {
namespace {

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::optional<long> to_long(std::string_view text) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The quota of this process's cgroup, as a container runtime sets a pod's CPU limit: v2's
// cpu.max at the root of the cgroup namespace (what a container sees), else v1's cfs files.
int quota_cpus() {
  if (int cpus = cpus_of_quota(first_line("/sys/fs/cgroup/cpu.max")); cpus > 0) return cpus;
  const std::string quota = first_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  const std::string period = first_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (quota.empty() || period.empty()) return 0;
  return cpus_of_quota(quota + " " + period);
}

}  // namespace

int cpus_of_quota(std::string_view cpu_max) {
  const size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return 0;
  const auto quota = to_long(cpu_max.substr(0, space));
  const auto period = to_long(cpu_max.substr(space + 1));
  // "max" (v2) and -1 (v1) mean no limit, and neither parses as a positive quota.
  if (!quota || !period || *quota <= 0 || *period <= 0) return 0;
  return static_cast<int>((*quota + *period - 1) / *period);
}

NodeCpus node_cpus_here() {
  NodeCpus out;
  out.usable = affinity_cpus();
  if (const int quota = quota_cpus(); quota > 0 && (out.usable == 0 || quota < out.usable))
    out.usable = quota;
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  out.online = online > 0 ? static_cast<int>(online) : 0;
  out.node = first_line("/proc/sys/kernel/random/boot_id");
  return out;
}

std::string to_string(const NodeCpus& cpus) {
  return fmt::format("{} {} {}", cpus.usable, cpus.online, cpus.node.empty() ? "-" : cpus.node);
}

std::optional<NodeCpus> parse_node_cpus(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string usable, online, node, rest;
  if (!(in >> usable >> online >> node) || (in >> rest)) return std::nullopt;
  const auto u = to_long(usable);
  const auto o = to_long(online);
  if (!u || !o || *u < 0 || *o < 0) return std::nullopt;
  return NodeCpus{static_cast<int>(*u), static_cast<int>(*o), node == "-" ? "" : node};
}

}  // namespace tutti::bootstrap
