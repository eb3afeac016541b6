#include "bootstrap/node_cpus.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <fstream>
#include <sstream>

namespace tutti::bootstrap {
namespace {

// This process's affinity mask as 64-bit words (empty when it cannot be read).
std::vector<uint64_t> affinity_mask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  std::vector<uint64_t> words;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const size_t word = static_cast<size_t>(cpu) / 64;
    if (words.size() <= word) words.resize(word + 1, 0);
    words[word] |= uint64_t{1} << (cpu % 64);
  }
  return words;
}

int count_of(const std::vector<uint64_t>& mask) {
  int n = 0;
  for (uint64_t w : mask) n += std::popcount(w);
  return n;
}

std::string mask_text(const std::vector<uint64_t>& mask) {
  if (mask.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < mask.size(); ++i) out += fmt::format("{}{:x}", i == 0 ? "" : ",", mask[i]);
  return out;
}

std::optional<std::vector<uint64_t>> parse_mask(std::string_view text) {
  std::vector<uint64_t> mask;
  if (text == "-") return mask;
  // At most CPU_SETSIZE CPUs: a longer list is not a mask this library wrote.
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view word = text.substr(start, comma - start);
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value, 16);
    if (word.empty() || ec != std::errc() || end != word.data() + word.size() ||
        mask.size() * 64 >= CPU_SETSIZE)
      return std::nullopt;
    mask.push_back(value);
    start = comma + 1;
  }
  return mask;
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

int shared_cpus(std::span<const NodeCpus> ranks) {
  std::vector<uint64_t> all;
  int largest_usable = 0;
  int quota = 0;
  bool masks_known = !ranks.empty();
  for (const NodeCpus& r : ranks) {
    largest_usable = std::max(largest_usable, r.usable);
    if (r.quota > 0) quota = quota == 0 ? r.quota : std::min(quota, r.quota);
    if (r.mask.empty()) masks_known = false;
    if (all.size() < r.mask.size()) all.resize(r.mask.size(), 0);
    for (size_t i = 0; i < r.mask.size(); ++i) all[i] |= r.mask[i];
  }
  if (!masks_known) return largest_usable;
  const int cpus = count_of(all);
  return quota > 0 ? std::min(cpus, quota) : cpus;
}

NodeCpus node_cpus_here() {
  NodeCpus out;
  out.mask = affinity_mask();
  out.usable = count_of(out.mask);
  out.quota = quota_cpus();
  if (out.quota > 0 && (out.usable == 0 || out.quota < out.usable)) out.usable = out.quota;
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  out.online = online > 0 ? static_cast<int>(online) : 0;
  out.node = first_line("/proc/sys/kernel/random/boot_id");
  return out;
}

std::string to_string(const NodeCpus& cpus) {
  return fmt::format("{} {} {} {} {}", cpus.usable, cpus.online,
                     cpus.node.empty() ? "-" : cpus.node, mask_text(cpus.mask), cpus.quota);
}

std::optional<NodeCpus> parse_node_cpus(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string usable, online, node, mask, quota, rest;
  if (!(in >> usable >> online >> node)) return std::nullopt;
  // Older builds wrote the first three fields only.
  const bool full = static_cast<bool>(in >> mask);
  if (full && !(in >> quota)) return std::nullopt;
  if (in >> rest) return std::nullopt;
  const auto u = to_long(usable);
  const auto o = to_long(online);
  if (!u || !o || *u < 0 || *o < 0) return std::nullopt;
  NodeCpus out{static_cast<int>(*u), static_cast<int>(*o), node == "-" ? "" : node, {}, 0};
  if (full) {
    const auto m = parse_mask(mask);
    const auto q = to_long(quota);
    if (!m || !q || *q < 0) return std::nullopt;
    out.mask = *m;
    out.quota = static_cast<int>(*q);
  }
  return out;
}

}  // namespace tutti::bootstrap
