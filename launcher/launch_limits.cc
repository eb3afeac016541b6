#include "launcher/launch_limits.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "core/error.hpp"

namespace tutti::launcher {
namespace {

long soft_limit(int resource) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return -1;
  return static_cast<long>(r.rlim_cur);
}

}  // namespace

LaunchLimits LaunchLimits::of_this_process() {
  LaunchLimits l;
  l.open_files = soft_limit(RLIMIT_NOFILE);
  l.processes = soft_limit(RLIMIT_NPROC);
  l.cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  return l;
}

void check_launch_capacity(int ranks, int local, const LaunchLimits& limits) {
  const long files = static_cast<long>(ranks) * kFilesPerRank + kFilesReserved;
  if (limits.open_files >= 0 && files > limits.open_files)
    throw make_error(
        ErrorCode::kConfig,
        "{} ranks need about {} open files in tuttirun ({} per rank for their pipes), but its "
        "limit is {}: raise it (ulimit -n {}) or start fewer ranks",
        ranks, files, kFilesPerRank, limits.open_files, files);
  if (limits.processes >= 0 && ranks > limits.processes)
    throw make_error(
        ErrorCode::kConfig,
        "{} ranks need {} processes, but this user may have {}: raise it (ulimit -u) or start "
        "fewer ranks",
        ranks, ranks, limits.processes);
  const long most_local = static_cast<long>(limits.cpus) * kMaxLocalRanksPerCpu;
  if (local > most_local)
    throw make_error(
        ErrorCode::kConfig,
        "{} ranks on this host is more than {} per CPU ({} CPUs): is -np right? Spread the "
        "ranks over hosts (--hostfile, -H, --pods)",
        local, kMaxLocalRanksPerCpu, limits.cpus);
}

}  // namespace tutti::launcher
