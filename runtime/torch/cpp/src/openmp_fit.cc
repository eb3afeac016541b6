#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>

#include "tutti/torch_openmp.hpp"

namespace tutti::torchx {
namespace {

// libgomp's entry for `#pragma omp parallel` (GCC's ABI since 4.9): runs fn(data) on a team of
// num_threads threads, the caller among them, and returns when all have.
using GompParallel = void (*)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);

// More idle threads than this and the parked team is not worth it; the note says what to set.
constexpr int kMaxSpareThreads = 128;
// Threads that must stay free under the process's limits besides the parked team: libgomp ends the
// process when it cannot start a team's thread, and the ranks start threads of their own later.
constexpr long kThreadHeadroom = 256;
// How long starting the parked team may take (a no-op region: milliseconds on an idle machine).
constexpr std::chrono::seconds kParkDeadline{30};

// The libgomp this process has loaded (torch's: a wheel carries its own, renamed or not; Debian's
// torch uses the system's), found by its file name so that no second copy is ever loaded.
GompParallel loaded_gomp_parallel() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string_view name = info->dlpi_name ? info->dlpi_name : "";
        const std::string_view base = name.substr(name.rfind('/') + 1);
        if (!base.starts_with("libgomp")) return 0;
        *static_cast<std::string*>(out) = std::string(name);
        return 1;
      },
      &path);
  if (path.empty()) return nullptr;
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return nullptr;
  auto* parallel = reinterpret_cast<GompParallel>(dlsym(handle, "GOMP_parallel"));
  dlclose(handle);  // NOLOAD took a reference; torch's own keeps the library loaded
  return parallel;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

template <typename... Parts>
std::string text(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// This process's threads now (/proc/self/status); 0 if unknown.
long threads_now() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "Threads:" && status >> value) return value;
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

// The cgroup v2 pids limit of this process's group and its use, if the group has a limit.
bool cgroup_pids(long& used, long& limit) {
  std::ifstream groups("/proc/self/cgroup");
  std::string line;
  while (std::getline(groups, line)) {
    if (!line.starts_with("0::")) continue;
    const std::string dir = "/sys/fs/cgroup" + line.substr(3);
    std::string max;
    if (!(std::ifstream(dir + "/pids.max") >> max) || max == "max") return false;
    limit = std::atol(max.c_str());
    return static_cast<bool>(std::ifstream(dir + "/pids.current") >> used);
  }
  return false;
}

// Whether `extra` more threads leave kThreadHeadroom free under the limits that would stop
// libgomp from starting them (RLIMIT_NPROC, counted roughly by this process's own threads, and a
// cgroup's pids.max); if not, says which in `why`.
bool room_for_threads(long extra, std::string& why) {
  rlimit nproc{};
  if (getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY &&
      threads_now() + extra + kThreadHeadroom > static_cast<long>(nproc.rlim_cur)) {
    why = text("RLIMIT_NPROC (", nproc.rlim_cur, ") leaves too little room");
    return false;
  }
  long used = 0, limit = 0;
  if (cgroup_pids(used, limit) && used + extra + kThreadHeadroom > limit) {
    why = text("the cgroup's pids.max (", limit, ", ", used, " in use) leaves too little room");
    return false;
  }
  return true;
}

// Runs one parallel region of `threads` on a new thread, which then sleeps for the life of the
// process: libgomp keeps the region's workers in that thread's pool and counts them as managed,
// which is the point. The thread blocks every signal, so that none is delivered to it, and is
// detached, since nothing may end it (its pool would go, and with it the throttling). False when
// the region has not finished within kParkDeadline (a machine too loaded to start threads).
bool park_spare_team(GompParallel parallel, int threads) {
  std::promise<void> started;
  std::future<void> ran = started.get_future();
  std::thread([parallel, threads, started = std::move(started)]() mutable {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    parallel([](void*) {}, nullptr, static_cast<unsigned>(threads), 0);
    started.set_value();
    for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
  }).detach();
  return ran.wait_for(kParkDeadline) == std::future_status::ready;
}

std::mutex fit_mutex;
bool parked = false;  // under fit_mutex
// A team started but not within kParkDeadline: it may still park later, so no second one is ever
// started; later calls get this note.
bool park_pending = false;
std::string parked_note;

}  // namespace

OpenMpFit fit_openmp_to_host(int ranks_on_host) {
  std::lock_guard lock(fit_mutex);
  if (parked || park_pending) return {parked, parked_note};
  const int threads = at::get_num_threads();
  const int cpus = usable_cpus();
  const std::string found = text(ranks_on_host, " rank(s) on this host x ", threads,
                                 " OpenMP thread(s) each, ", cpus, " CPUs for this process");
  const std::string advice =
      text("OMP_NUM_THREADS=", std::max(1, cpus / std::max(1, ranks_on_host)));
  if (threads <= 1) return {false, found + ": no spinning workers, nothing to fit"};
  if (cpus <= 0 || ranks_on_host * threads <= cpus)
    return {false, found + ": they fit, libgomp left as it is"};
  if (threads > cpus)
    return {false, found +
                       ": libgomp throttles by itself (this process alone has more threads "
                       "than CPUs)"};
  for (const char* name : {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"}) {
    if (std::getenv(name)) return {false, found + ": " + name + " is set, libgomp left as set"};
  }
  const GompParallel parallel = loaded_gomp_parallel();
  if (!parallel)
    return {false,
            found + ": torch's OpenMP runtime is not libgomp; set its wait policy, or " + advice};
  // libgomp throttles once its managed threads (the caller's team of `threads`, and the team
  // parked here of `spare`, the parked thread among them) outnumber the CPUs.
  const int spare = cpus - threads + 2;
  if (spare - 1 > kMaxSpareThreads)
    return {false, found + ": too many CPUs to throttle libgomp from here; set " + advice +
                       " or GOMP_SPINCOUNT=1000 before starting the ranks"};
  if (std::string why; !room_for_threads(spare - 1, why))
    return {false, found + ": " + why + " for " + text(spare - 1) +
                       " parked OpenMP thread(s); set " + advice + " or GOMP_SPINCOUNT=1000"};
  try {
    if (!park_spare_team(parallel, spare)) {
      park_pending = true;
      parked_note = found + ": the parked OpenMP team did not start within " +
                    text(kParkDeadline.count()) + " s; set " + advice + " or GOMP_SPINCOUNT=1000";
      return {false, parked_note};
    }
  } catch (const std::system_error& e) {
    return {false, found + ": no thread to park an OpenMP team on (" + e.what() + "); set " +
                       advice + " or GOMP_SPINCOUNT=1000"};
  }
  parked = true;
  parked_note = found + ": libgomp's spin-wait throttled as for an oversubscribed process (" +
                text(spare - 1) + " idle OpenMP thread(s) parked); " + advice +
                " gives the fastest steps, GOMP_SPINCOUNT or OMP_WAIT_POLICY chooses otherwise";
  return {true, parked_note};
}

OpenMpFit fit_openmp_to_host(const Communicator& comm) {
  return fit_openmp_to_host(comm.local_size());
}

}  // namespace tutti::torchx
