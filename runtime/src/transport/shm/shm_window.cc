#include "transport/shm/shm_window.hpp"

#include <sched.h>

#include <atomic>
#include <charconv>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "transport/shm/window_segment.hpp"

namespace tutti::transport {
namespace {

// With a CPU per rank a peer answers within a few hundred nanoseconds: spinning this long (a few
// microseconds) catches it without a system call.
constexpr int kSpinRoundsWhenCpusSuffice = 2000;

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

int default_spin_rounds(int local_ranks, int host_cpus) {
  return local_ranks <= (host_cpus > 0 ? host_cpus : usable_cpus()) ? kSpinRoundsWhenCpusSuffice
                                                                    : 0;
}

std::unique_ptr<LocalWindow> connect_local_window(const MeshContext& context, Transport& transport,
                                                  size_t area_bytes, int spin_rounds,
                                                  std::string& why_none) {
  const MeshConfig& c = context.config;
  const std::string key = context.key("window", 0);
  // The window is built in a collective: its waits end, as the collective's own do, on an abort,
  // a peer's abort notice or an awaited peer's death, not only at the deadline.
  MeshContext watched = context;
  watched.watch = [&transport](std::span<const int> awaited) {
    transport.check_peers(awaited, "the shared-memory window's setup");
  };
  // Rank 0's failure to create the window, as every rank reports it.
  auto no_room = [&](const std::string& why) -> std::unique_ptr<LocalWindow> {
    if (c.shm_window_required)
      throw c.rank == 0 ? make_error(ErrorCode::kSystem, "{}", why)
                        : make_error(ErrorCode::kSystem, "rank {}: {}", c.rank, why);
    // Once per process: a job with many splits would otherwise repeat it for each.
    static std::atomic<bool> warned{false};
    const std::string text = fmt::format(
        "communicator {} goes on without a shared-memory window (its collectives use the rings "
        "instead): {}",
        c.job_id, why);
    if (!warned.exchange(true))
      log::warn("{} (later communicators that lack room say so at debug level)", text);
    else
      log::debug("{}", text);
    why_none = "the window did not fit in /dev/shm: " + why;
    return nullptr;
  };
  std::shared_ptr<WindowSegment> segment;
  if (c.rank == 0) {
    const size_t bytes = LocalWindow::footprint(c.size, area_bytes);
    SegmentPurpose purpose{
        "rank 0",
        fmt::format("the shared-memory window of {} ranks ({} each)", c.size,
                    parse::bytes_text(area_bytes)),
        "TUTTI_SHM_WINDOW_BYTES (per rank), TUTTI_SHM_WINDOW_BUDGET (all ranks), or set "
        "TUTTI_SHM_WINDOW_BYTES=0 to go without"};
    try {
      segment = WindowSegment::create(WindowSegment::name_for(c.job_id), bytes, purpose);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kSystem) throw;
      context.publish_failure("window", 0, e.what());
      return no_room(e.what());
    }
    context.store.set(key, fmt::format("{} {}", segment->name(), area_bytes));
    std::vector<int> others;
    for (int r = 1; r < c.size; ++r) others.push_back(r);
    watched.wait_for("window-mapped", others, "map the shared-memory window",
                     fmt::format("/dev/shm{} on host {}", segment->name(), context.host(0)));
    segment->unlink();
  } else {
    watched.wait_for({0}, {key}, "create the shared-memory window",
                     "the store (" + context.store.describe() + ")");
    std::string value = context.store.get(key, context.deadline);
    if (auto why = MeshContext::published_failure(value))
      return no_room(fmt::format("rank 0 could not create the shared-memory window: {}", *why));
    size_t space = value.rfind(' ');
    const char* end = value.data() + value.size();
    area_bytes = 0;
    // Bounded as TUTTI_SHM_WINDOW_BYTES is (1G), so the footprint computed from it cannot overflow.
    if (space == std::string::npos ||
        std::from_chars(value.data() + space + 1, end, area_bytes).ptr != end || area_bytes == 0 ||
        area_bytes > (size_t{1} << 30))
      throw make_error(ErrorCode::kInternal, "store key {} holds '{}', not '<segment> <bytes>'",
                       key, value);
    segment = WindowSegment::open(value.substr(0, space),
                                  LocalWindow::footprint(c.size, area_bytes), "rank 0");
    context.store.set(context.key("window-mapped", c.rank), "1");
  }
  log::debug("rank {}: shared-memory window {} ({} bytes per rank; {} ranks, {} between them: {})",
             c.rank, segment->name(), area_bytes, c.size,
             c.host_cpus > 0 ? fmt::format("{} CPU{}", c.host_cpus, c.host_cpus == 1 ? "" : "s")
                             : std::string("CPUs unknown"),
             spin_rounds > 0 ? fmt::format("its waits spin {} rounds, then yield", spin_rounds)
                             : std::string("its waits yield at once"));
  std::byte* memory = segment->data();
  return std::make_unique<LocalWindow>(transport, memory, area_bytes, std::move(segment),
                                       spin_rounds);
}

}  // namespace tutti::transport
