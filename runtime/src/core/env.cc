#include "core/env.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace tutti::env {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The shortest deadline a setting may give; zero is refused (every wait in tutti has a deadline).
constexpr double kMinDeadline = 0.001;

// A row's Options member, and its name (which the tests match against the header's comments).
#define TUTTI_OPTION(member) &Options::member, #member

constexpr std::array kVariables = {
    Variable{"TUTTI_RANK", Kind::kInt, "", "",
             "This process's rank in the world (set by tuttirun).", 0, kMaxRanks - 1},
    Variable{"TUTTI_SIZE", Kind::kInt, "", "", "Number of ranks in the world (set by tuttirun).", 1,
             kMaxRanks},
    Variable{"TUTTI_LOCAL_RANK", Kind::kInt, "", "",
             "Rank among the ranks on this host (set by tuttirun).", 0, kMaxRanks - 1},
    Variable{"TUTTI_LOCAL_SIZE", Kind::kInt, "", "",
             "Number of ranks on this host (set by tuttirun).", 1, kMaxRanks},
    Variable{"TUTTI_CROSS_RANK", Kind::kInt, "", "",
             "Index of this host among the job's hosts (set by tuttirun).", 0, kMaxRanks - 1},
    Variable{"TUTTI_CROSS_SIZE", Kind::kInt, "", "",
             "Number of hosts in the job (set by tuttirun).", 1, kMaxRanks},
    Variable{"TUTTI_HOST", Kind::kString, "", "",
             "Host identity; ranks with equal values share memory. Default: the machine's hostname "
             "and boot id.",
             0, 0, TUTTI_OPTION(host_id)},
    Variable{"TUTTI_STORE", Kind::kString, "", "",
             "Rendezvous store: `host:port` (TcpStore), `file:/shared/dir` (FileStore: an "
             "existing directory every rank shares, one per job or per `TUTTI_JOB_ID`) or "
             "`etcd://host:port[,host:port][/prefix]` (an etcd 3.4+ cluster's client URLs; keys "
             "under the prefix, `/tutti` by default)."},
    Variable{"TUTTI_ETCD_LEASE_TTL", Kind::kSeconds, "10", "",
             "With an etcd store: the lease each process attaches its keys to, kept alive while "
             "it runs. A dead process's keys expire this long after it stopped; a new run of the "
             "same job id waits as long for an earlier run's keys to go. 0: no lease (keys stay "
             "until removed).",
             0, 3600, TUTTI_OPTION(etcd_lease_ttl)},
    Variable{"TUTTI_JOB_TOKEN", Kind::kString, "", "",
             "Secret every connection must present (store and data ports); a stranger is refused.",
             0, 0, TUTTI_OPTION(job_token)},
    Variable{"TUTTI_JOB_ID", Kind::kString, "", "",
             "Job name; prefixes store keys and shared-memory segment names. Default: derived from "
             "the store."},
    Variable{"TUTTI_TIMEOUT", Kind::kSeconds, "60", "",
             "Deadline for init: store rendezvous and connecting to peers.", kMinDeadline,
             parse::kMaxSeconds, TUTTI_OPTION(init_timeout)},
    Variable{"TUTTI_COLLECTIVE_TIMEOUT", Kind::kSeconds, "600", "",
             "Deadline for one collective call; a stalled peer is reported after it.", kMinDeadline,
             parse::kMaxSeconds, TUTTI_OPTION(timeout)},
    Variable{"TUTTI_STALL_REPORT", Kind::kSeconds, "10", "",
             "A collective that some ranks have been in this long while others have not called "
             "it is reported: the lowest waiting rank names the missing ranks and their hosts, "
             "and each missing rank says what it last called. 0 turns the report off.",
             0, parse::kMaxSeconds, TUTTI_OPTION(stall_report)},
    Variable{"TUTTI_LOG_LEVEL", Kind::kChoice, "warn", "error|warn|info|debug|trace",
             "Logging threshold (stderr)."},
    Variable{"TUTTI_TRANSPORT", Kind::kChoice, "auto", "auto|tcp|shm|mpi",
             "Per-peer transport: auto = shm for peers on this host, tcp otherwise; mpi = MPI "
             "point-to-point to every peer (a job started by Open MPI's mpirun, libtutti built "
             "with MPI).",
             0, 0, TUTTI_OPTION(transport)},
    Variable{
        "TUTTI_ALGO", Kind::kChoice, "auto", "auto|ring|tree|hd|shm|hier",
        "Allreduce algorithm: ring, double binary tree, recursive halving-doubling, shared-memory "
        "window (all ranks on one host), hierarchical (reduce on each host, allreduce across "
        "hosts, "
        "broadcast on each host), or auto: the cost model's pick per call.",
        0, 0, TUTTI_OPTION(algorithm)},
    Variable{"TUTTI_DEVICE_ALLREDUCE", Kind::kChoice, "auto", "auto|nccl|ring|hier",
             "Allreduce on GPU buffers: nccl = NCCL's own; ring = tutti's pipelined ring over "
             "NCCL send/recv with tutti's reduce kernels (every dtype and op); hier = NCCL "
             "reduce-scatter on each host, tutti's host ring across hosts, NCCL allgather; auto = "
             "nccl where NCCL reduces the type and op itself (not int16, not bitwise ops), else "
             "ring.",
             0, 0, TUTTI_OPTION(device_allreduce)},
    Variable{"TUTTI_DEVICE_CHUNK_BYTES", Kind::kBytes, "64M", "",
             "The device ring's chunk: the most bytes one ring step moves in one grouped NCCL "
             "send/recv (and reduces in one kernel). Each NCCL operation costs a fixed latency "
             "(milliseconds where NCCL goes over sockets), so the ring moves whole blocks up to "
             "this size; two chunks of device scratch are kept per communicator.",
             1, 4 * kGiB, TUTTI_OPTION(device_chunk_bytes)},
    Variable{"TUTTI_NCCL_P2P_CHUNK_BYTES", Kind::kBytes, "512K", "",
             "NCCL_P2P_NET_CHUNKSIZE that libtutti sets, before its first device call makes an "
             "NCCL communicator, when the process has none: the bytes NCCL's send/recv (tutti's "
             "device ring and hier paths) "
             "moves per network step. NCCL's default is 128K; NCCL reads it once per process; its "
             "collectives do not use it. 0 leaves NCCL's own.",
             0, kGiB, TUTTI_OPTION(nccl_p2p_chunk_bytes)},
    Variable{
        "TUTTI_TUNE_FILE", Kind::kString, "", "",
        "Tuning file from `tutti-bench allreduce --tune FILE`: fitted latency/bandwidth lines that "
        "replace the cost model's built-in constants for the placements they were measured on. At "
        "most 16 MiB is read.",
        0, 0, TUTTI_OPTION(tune_file)},
    Variable{"TUTTI_SEGMENT_BYTES", Kind::kBytes, "256K", "",
             "Pipeline segment size of ring and tree collectives.", 1, kGiB,
             TUTTI_OPTION(segment_bytes)},
    Variable{"TUTTI_TCP_SEGMENT_MAX_BYTES", Kind::kBytes, "2M", "",
             "Where a ring of 3 or more ranks crosses TCP links, its segment grows with the "
             "message (an eighth of a rank's block, never below TUTTI_SEGMENT_BYTES) up to this: "
             "fewer, larger socket writes. 0 keeps TUTTI_SEGMENT_BYTES; setting "
             "TUTTI_SEGMENT_BYTES alone also keeps it.",
             0, kGiB, TUTTI_OPTION(tcp_segment_max_bytes)},
    Variable{"TUTTI_SHM_RING_BYTES", Kind::kBytes, "1M", "",
             "Size of each shared-memory ring buffer between two local ranks (one per direction).",
             4 * kKiB, kGiB, TUTTI_OPTION(shm_ring_bytes)},
    Variable{"TUTTI_SHM_RING_BUDGET", Kind::kBytes, "8M", "",
             "Most bytes of shared-memory receive rings one rank owns, shared among the other "
             "ranks on its host: with many local ranks each ring shrinks below "
             "TUTTI_SHM_RING_BYTES (to a power of two, at least 4 KiB), so /dev/shm per rank "
             "stays bounded.",
             64 * kKiB, kGiB, TUTTI_OPTION(shm_ring_budget)},
    Variable{"TUTTI_SHM_WINDOW_BYTES", Kind::kBytes, "4M", "",
             "Per-rank area of the shared-memory window of the `shm` allreduce when all ranks "
             "share a host "
             "(larger messages go through in pieces); 0 turns the window off.",
             0, kGiB, TUTTI_OPTION(shm_window_bytes)},
    Variable{"TUTTI_SHM_WINDOW_BUDGET", Kind::kBytes, "256M", "",
             "Most bytes of one shared-memory window (all its ranks' areas together): with many "
             "local ranks each area shrinks below TUTTI_SHM_WINDOW_BYTES. A split communicator's "
             "window that does not fit in /dev/shm is left out with a warning; the world's is an "
             "error.",
             kMiB, 64 * kGiB, TUTTI_OPTION(shm_window_budget)},
    Variable{"TUTTI_SHM_SPIN_ROUNDS", Kind::kInt, "", "",
             "Busy-wait rounds before a shared-memory window wait yields; default: 2000 when every "
             "local rank "
             "has a CPU of its own, else 0.",
             0, 1e9, TUTTI_OPTION(shm_spin_rounds)},
    Variable{"TUTTI_SHM_STORES", Kind::kChoice, "auto", "auto|cached|streaming",
             "How the `shm` allreduce writes into the shared window and into the output: "
             "non-temporal (streaming) or ordinary stores; auto times the four combinations per "
             "message size class (in place and out of place apart) and keeps the fastest, the "
             "same on every rank (all learn from rank 0's times); cached or streaming forces "
             "both. Set it alike on every rank.",
             0, 0, TUTTI_OPTION(shm_stores)},
    Variable{"TUTTI_TCP_STREAMS", Kind::kInt, "1", "",
             "TCP connections per pair of ranks; messages of 32 KiB and more are cut across them. "
             "Every rank "
             "of a job must use the same value.",
             1, 16, TUTTI_OPTION(tcp_streams)},
    Variable{"TUTTI_TCP_BUFFER_BYTES", Kind::kBytes, "0", "",
             "Send and receive buffer of each TCP data socket (capped by "
             "net.core.wmem_max/rmem_max). 0, the default, leaves the kernel's autotuning on: "
             "fixed buffers turn it off, and between 4 veth pods fixed 4 MiB buffers made a "
             "97.5 MiB allreduce up to 9% slower, with 100x the (spurious) retransmits.",
             0, kGiB, TUTTI_OPTION(tcp_buffer_bytes)},
    Variable{"TUTTI_TCP_CONGESTION", Kind::kString, "auto", "",
             "TCP congestion control of the data sockets: auto switches a socket the kernel gave "
             "BBR to CUBIC (between veth pods BBR measured half of CUBIC's throughput) and keeps "
             "any other; system keeps the kernel's choice; a name (cubic, reno, dctcp, ...) "
             "sets that one, and fails if the kernel lacks it or does not allow it.",
             0, 0, TUTTI_OPTION(tcp_congestion)},
    Variable{"TUTTI_MPI_MESSAGE_BYTES", Kind::kBytes, "60K", "",
             "Largest MPI message of TUTTI_TRANSPORT=mpi: larger payloads are cut into messages "
             "of this size. Below the MPI's eager limit (Open MPI's TCP: 64 KiB) every message "
             "is sent at once, with no rendezvous round trip per message; raise it where "
             "rendezvous is cheap (RDMA networks).",
             4 * kKiB, kGiB, TUTTI_OPTION(mpi_message_bytes)},
    Variable{"TUTTI_SOCKET_IFNAME", Kind::kString, "", "",
             "Interfaces ranks listen on for peers (and tuttirun advertises its store on), in "
             "NCCL/Gloo syntax: `eth` = names starting with eth, `eth,ib` = a list, `^docker,lo` "
             "= all but these, `=eth0` = exact names, `^=lo` = all but these exact names. Of the "
             "selected interfaces that are up, the first IPv4 address is used, else the first "
             "IPv6 one (never link-local); loopback only when named. No match: init fails listing "
             "this host's interfaces. Default: unset (the address that reaches the store).",
             0, 0, TUTTI_OPTION(socket_ifname)},
    Variable{"TUTTI_ADDR", Kind::kString, "", "",
             "Address (IPv4 or IPv6) this rank listens on for peers; wins over "
             "TUTTI_SOCKET_IFNAME. Default: the local address that reaches the store.",
             0, 0, TUTTI_OPTION(listen_address)},
    Variable{"TUTTI_LAUNCHER", Kind::kString, "", "",
             "Set by tuttirun; once the launcher's store connection drops, every call fails with "
             "TUTTI_ERR_ABORTED (the library never ends the process)."},
    Variable{"TUTTI_LAUNCH_ID", Kind::kInt, "", "",
             "Set by tuttirun: its number for this process. The process then sends a heartbeat "
             "a second on its launcher connection, by which tuttirun --hang-timeout tells a "
             "stopped or hung rank from a busy one.",
             0, 2147483647},
    Variable{"TUTTI_RESTART_COUNT", Kind::kInt, "0", "",
             "Which attempt of the job this is (set by tuttirun).", 0, 2147483647},
    Variable{"TUTTI_MEMBER_ID", Kind::kInt, "", "",
             "Elastic jobs (tuttirun --max-np): this process's member id, which the launcher's "
             "membership lists name (set by tuttirun; default: the world rank).",
             0, 2147483647},
    Variable{"TUTTI_ELASTIC_EPOCH", Kind::kInt, "", "",
             "Elastic jobs: the membership this process was started into (set by tuttirun "
             "--max-np: 0 for the first ranks, later memberships for ranks that join a running "
             "job, which then take the state from rank 0 in elastic::run).",
             0, 2147483647},
    Variable{"TUTTI_ELASTIC_JOB", Kind::kString, "", "",
             "Elastic jobs: the job id memberships are numbered under (set by tuttirun "
             "--max-np); membership E meets as job <id>-e<E>."},
    Variable{"TUTTI_ELASTIC_MIN_NP", Kind::kInt, "0", "",
             "Elastic jobs: the fewest ranks a job goes on with (set by tuttirun from --min-np; "
             "0: any number). When a death leaves fewer, elastic::run waits (up to "
             "TUTTI_ELASTIC_TIMEOUT) for the launcher to add ranks in a job that grows "
             "(--host-discovery-script), and otherwise fails at once, before any step.",
             0, 2147483647},
    Variable{"TUTTI_ELASTIC_TIMEOUT", Kind::kSeconds, "600", "",
             "Elastic jobs: how long elastic::run waits below TUTTI_ELASTIC_MIN_NP for ranks to "
             "join (set by tuttirun from --elastic-timeout) before it fails with "
             "TUTTI_ERR_TIMEOUT.",
             0.001, 1e6},
    Variable{"TUTTI_CYCLE_TIME", Kind::kSeconds, "1ms", "",
             "Engine: the longest a rank with work pending waits for news before its next "
             "negotiation cycle, and the longest a burst of enqueues delays its cycle (ten "
             "times that, at most 100 ms, while the burst is the start of a repeating loop's "
             "step). An "
             "enqueue wakes the engine at once; an idle engine wakes once a second.",
             1e-6, 1.0, TUTTI_OPTION(cycle_time)},
    Variable{"TUTTI_FUSION_THRESHOLD", Kind::kBytes, "4M", "",
             "Engine: ready allreduces of one dtype, op and scale, up to this many bytes, are "
             "reduced by one collective (in the tensors themselves on the shm window, the ring "
             "and hier, else packed into one buffer); 0 turns fusion off. 4M keeps a batch in "
             "cache: over TCP it ran ResNet-50's sync 1.2-1.5x faster than 64M (measured "
             "packed).",
             0, 4 * kGiB, TUTTI_OPTION(fusion_threshold)},
    Variable{"TUTTI_CACHE_CAPACITY", Kind::kInt, "1024", "",
             "Engine: names the response cache holds; a cached name is negotiated by one bit "
             "instead of its description. 0 turns the cache off.",
             0, 1 << 20, TUTTI_OPTION(cache_capacity)},
    Variable{"TUTTI_STALL_WARNING", Kind::kSeconds, "60", "",
             "Engine: rank 0 logs a tensor that some ranks submitted and others not for this long, "
             "naming the missing ranks (and again every period).",
             kMinDeadline, parse::kMaxSeconds, TUTTI_OPTION(stall_warning)},
    Variable{"TUTTI_STALL_TIMEOUT", Kind::kSeconds, "600", "",
             "Engine: such a tensor's handles fail on every rank after this long, with the same "
             "message. The default matches TUTTI_COLLECTIVE_TIMEOUT, the longest one synchronous "
             "call may wait for a peer.",
             kMinDeadline, parse::kMaxSeconds, TUTTI_OPTION(stall_timeout)},
    Variable{"TUTTI_AUTOTUNE", Kind::kBool, "0", "",
             "Engine: rank 0 tunes the fusion threshold and the cycle time from the bytes "
             "completed per second (3 windows per candidate of a short grid), logs its choice "
             "(TUTTI_LOG_LEVEL=info) and writes it to TUTTI_AUTOTUNE_FILE.",
             0, 0, TUTTI_OPTION(autotune)},
    Variable{"TUTTI_AUTOTUNE_FILE", Kind::kString, "", "",
             "Engine: where autotune writes its choice; when the file exists at start, its values "
             "are used (by every rank, through rank 0) and nothing is tuned.",
             0, 0, TUTTI_OPTION(autotune_file)},
    Variable{"TUTTI_AUTOTUNE_WINDOW", Kind::kSeconds, "0.5", "",
             "Engine: length of one autotune measurement window.", kMinDeadline, 3600,
             TUTTI_OPTION(autotune_window)},
    Variable{"TUTTI_TIMELINE", Kind::kString, "", "",
             "Engine: write a Chrome-trace timeline (chrome://tracing, Perfetto) to this path, one "
             "file per rank: `{rank}` in the path is replaced by the world rank, else "
             "`.rank<N>` goes before the extension when the world has more than one rank."},
};
#undef TUTTI_OPTION

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// "64K" for 65536: byte sizes in the docs' table the way users write them (parse::bytes_text
// writes "64 KiB" for messages).
std::string short_bytes_text(uint64_t bytes) {
  constexpr std::array<std::pair<unsigned, char>, 3> kUnits = {{{30, 'G'}, {20, 'M'}, {10, 'K'}}};
  for (auto [shift, unit] : kUnits)
    if (bytes != 0 && bytes % (uint64_t{1} << shift) == 0)
      return fmt::format("{}{}", bytes >> shift, unit);
  return std::to_string(bytes);
}

std::string range_text(const Variable& v) {
  switch (v.kind) {
    case Kind::kInt:
      return fmt::format("{}–{}", static_cast<int64_t>(v.min), static_cast<int64_t>(v.max));
    case Kind::kBytes:
      return fmt::format("{}–{}", short_bytes_text(static_cast<uint64_t>(v.min)),
                         short_bytes_text(static_cast<uint64_t>(v.max)));
    case Kind::kSeconds:
      return fmt::format("{}–{} s", v.min, v.max);
    default:
      return "-";
  }
}

std::string value_or_default(std::string_view name) {
  const Variable& v = find(name);
  if (auto r = raw(name)) return *r;
  return std::string(v.default_value);
}

}  // namespace

std::span<const Variable> all() {
  return kVariables;
}

const Variable& find(std::string_view name) {
  for (const auto& v : kVariables)
    if (v.name == name) return v;
  throw make_error(ErrorCode::kInternal, "environment variable {} is not in tutti's registry",
                   name);
}

std::optional<std::string> process_value(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::optional<std::string> raw(std::string_view name) {
  find(name);
  return process_value(name);
}

bool is_set(std::string_view name) {
  return raw(name).has_value();
}

std::string get_string(std::string_view name) {
  return value_or_default(name);
}

namespace {

int64_t int_of(const Variable& v, const std::string& text) {
  if (text.empty()) throw make_error(ErrorCode::kConfig, "{} is not set", v.name);
  return parse::integer(text, v.name, static_cast<int64_t>(v.min), static_cast<int64_t>(v.max));
}

double seconds_of(const Variable& v, const std::string& text) {
  return parse::seconds(text, v.name, v.min, v.max);
}

uint64_t bytes_of(const Variable& v, const std::string& text) {
  return parse::bytes(text, v.name, static_cast<uint64_t>(v.min), static_cast<uint64_t>(v.max));
}

bool bool_of(const Variable& v, const std::string& text) {
  std::string t = lowercase(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off" || t.empty()) return false;
  throw make_error(ErrorCode::kConfig, "{}='{}' is not a boolean (1/0, true/false, yes/no, on/off)",
                   v.name, t);
}

// The choice's index in v.choices, and its lower-cased name.
std::pair<int, std::string> choice_of(const Variable& v, const std::string& text) {
  std::string t = lowercase(text);
  std::string_view choices = v.choices;
  size_t start = 0;
  for (int index = 0; start <= choices.size(); ++index) {
    size_t bar = choices.find('|', start);
    if (bar == std::string_view::npos) bar = choices.size();
    if (choices.substr(start, bar - start) == t) return {index, t};
    start = bar + 1;
  }
  throw make_error(ErrorCode::kConfig, "{}='{}' is not one of {}", v.name, t, choices);
}

template <typename Duration>
Duration duration_of(const Variable& v, const std::string& text) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds_of(v, text)));
}

// Sets the Options member `v` binds from `text` (its value or its default).
void set_field(Options& o, const Variable& v, const std::string& text) {
  std::visit(
      [&](auto member) {
        using Member = decltype(member);
        if constexpr (std::is_same_v<Member, std::monostate>) {
          return;
        } else {
          using T = std::remove_reference_t<decltype(o.*member)>;
          T& out = o.*member;
          if constexpr (std::is_same_v<T, size_t>) {
            out = v.kind == Kind::kBytes ? static_cast<size_t>(bytes_of(v, text))
                                         : static_cast<size_t>(int_of(v, text));
          } else if constexpr (std::is_same_v<T, int>) {
            out = static_cast<int>(int_of(v, text));
          } else if constexpr (std::is_same_v<T, bool>) {
            out = bool_of(v, text);
          } else if constexpr (std::is_same_v<T, std::string>) {
            out = v.kind == Kind::kChoice ? choice_of(v, text).second : text;
          } else if constexpr (std::is_same_v<T, std::optional<int>>) {
            out = text.empty() ? std::nullopt : std::optional<int>(int_of(v, text));
          } else if constexpr (std::is_same_v<T, std::chrono::seconds>) {
            // Whole seconds (etcd leases), rounded up so that a fraction never becomes 0: none.
            out = std::chrono::seconds(static_cast<int64_t>(std::ceil(seconds_of(v, text))));
          } else if constexpr (std::is_enum_v<T>) {
            out = static_cast<T>(choice_of(v, text).first);
          } else {
            out = duration_of<T>(v, text);
          }
        }
      },
      v.field);
}

}  // namespace

int64_t get_int(std::string_view name) {
  return int_of(find(name), value_or_default(name));
}

double parse_seconds(std::string_view text, std::string_view what) {
  return parse::seconds(text, what);
}

double get_seconds(std::string_view name) {
  return seconds_of(find(name), value_or_default(name));
}

uint64_t parse_bytes(std::string_view text, std::string_view what) {
  return parse::bytes(text, what);
}

uint64_t get_bytes(std::string_view name) {
  return bytes_of(find(name), value_or_default(name));
}

bool get_bool(std::string_view name) {
  return bool_of(find(name), value_or_default(name));
}

std::string get_choice(std::string_view name) {
  return choice_of(find(name), value_or_default(name)).second;
}

std::string_view choice_name(std::string_view name, int index) {
  std::string_view choices = find(name).choices;
  for (int i = 0; i < index; ++i) {
    size_t bar = choices.find('|');
    if (bar == std::string_view::npos)
      throw make_error(ErrorCode::kInternal, "{} has no choice {}", name, index);
    choices.remove_prefix(bar + 1);
  }
  return choices.substr(0, choices.find('|'));
}

void fill(Options& options, bool from_environment) {
  for (const auto& v : kVariables) {
    if (std::holds_alternative<std::monostate>(v.field)) continue;
    std::optional<std::string> value = from_environment ? raw(v.name) : std::nullopt;
    set_field(options, v, value ? *value : std::string(v.default_value));
  }
  // A segment set by hand stays as set: TUTTI_SEGMENT_BYTES alone turns the TCP ring's growing
  // segment off (TUTTI_TCP_SEGMENT_MAX_BYTES's row says so).
  if (from_environment && is_set("TUTTI_SEGMENT_BYTES") && !is_set("TUTTI_TCP_SEGMENT_MAX_BYTES"))
    options.tcp_segment_max_bytes = 0;
}

void check_all() {
  for (const auto& v : kVariables) {
    if (!is_set(v.name)) continue;
    switch (v.kind) {
      case Kind::kString:
        break;
      case Kind::kInt:
        get_int(v.name);
        break;
      case Kind::kSeconds:
        get_seconds(v.name);
        break;
      case Kind::kBytes:
        get_bytes(v.name);
        break;
      case Kind::kChoice:
        get_choice(v.name);
        break;
      case Kind::kBool:
        get_bool(v.name);
        break;
    }
  }
}

namespace {

// Optimal string alignment distance: edits, where swapping two neighbours is one (ALOG for ALGO).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string nearest(std::string_view name) {
  // Close enough to be the one meant: two edits, three in a long name (TUTTI_COLECTIVE_TIMOUT).
  size_t allowed = name.size() >= 16 ? 3 : 2;
  std::string_view best;
  size_t best_distance = allowed + 1;
  for (const auto& v : kVariables) {
    size_t d = edit_distance(name, v.name);
    if (d < best_distance) {
      best = v.name;
      best_distance = d;
    }
  }
  return std::string(best);
}

std::vector<std::pair<std::string, std::string>> unknown_variables() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    std::string_view name = text.substr(0, equals);
    if (!name.starts_with("TUTTI_")) continue;
    bool known = std::any_of(kVariables.begin(), kVariables.end(),
                             [&](const Variable& v) { return v.name == name; });
    if (!known) out.emplace_back(std::string(name), nearest(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string markdown_table() {
  std::string out = "| Variable | Type | Default | Range | Meaning |\n|---|---|---|---|---|\n";
  for (const auto& v : kVariables) {
    std::string_view type;
    switch (v.kind) {
      case Kind::kString:
        type = "string";
        break;
      case Kind::kInt:
        type = "integer";
        break;
      case Kind::kSeconds:
        type = "seconds";
        break;
      case Kind::kBytes:
        type = "bytes";
        break;
      case Kind::kChoice:
        type = v.choices;
        break;
      case Kind::kBool:
        type = "bool";
        break;
    }
    std::string type_text(type);
    std::replace(type_text.begin(), type_text.end(), '|', '/');
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", v.name, type_text,
                       v.default_value.empty() ? "-" : fmt::format("`{}`", v.default_value),
                       range_text(v), v.description);
  }
  return out;
}

}  // namespace tutti::env
