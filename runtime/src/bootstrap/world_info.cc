// Each launcher announces rank and size in its own variables. We try them in a fixed order
// (tuttirun first: it is the most specific) and validate whatever we found in one place.
// Foreign variables (OMPI_*, PMI_*, RANK, SLURM_*, ...) are not ours to register, so they are read
// with env::process_value; TUTTI_* ones go through the env registry.
#include "bootstrap/world_info.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "core/slurm_lists.hpp"
#include "net/socket.hpp"

namespace tutti::bootstrap {
namespace {

constexpr int kUnknown = -1;

// What one launcher's variables said, plus the "NAME=value" pairs for error messages.
struct Reading {
  std::string source;
  int rank = 0;
  int size = 1;
  int local_rank = kUnknown;
  int local_size = kUnknown;
  int cross_rank = kUnknown;
  int cross_size = kUnknown;
  std::vector<std::string> seen{};

  std::string variables() const {
    std::string out;
    for (const auto& s : seen) out += (out.empty() ? "" : ", ") + s;
    return out;
  }
};

// A rank or host index, and a count of ranks or hosts: the bounds every launcher's value must fit.
struct Bounds {
  int64_t min, max;
};
constexpr Bounds kIndex{0, env::kMaxRanks - 1};
constexpr Bounds kCount{1, env::kMaxRanks};
constexpr Bounds kFd{0, 1 << 30};

// Reads an integer variable of another launcher through the checked parser; records it for
// messages. Out of range or not a number is Error(kConfig) naming the variable and the range.
std::optional<int> foreign_int(const char* name, Reading& reading, Bounds bounds) {
  auto text = env::process_value(name);
  if (!text) return std::nullopt;
  reading.seen.push_back(fmt::format("{}={}", name, *text));
  try {
    return static_cast<int>(parse::integer(*text, name, bounds.min, bounds.max));
  } catch (const Error& e) {
    throw make_error(ErrorCode::kConfig, "{} (read as the {} world layout)", e.what(),
                     reading.source);
  }
}

std::optional<int> tutti_int(std::string_view name, Reading& reading) {
  if (!env::is_set(name)) return std::nullopt;
  reading.seen.push_back(fmt::format("{}={}", name, *env::raw(name)));
  return static_cast<int>(env::get_int(name));
}

void set_if(int& field, std::optional<int> value) {
  if (value) field = *value;
}

std::optional<Reading> from_tuttirun() {
  Reading r{.source = "tuttirun"};
  auto rank = tutti_int("TUTTI_RANK", r);
  auto size = tutti_int("TUTTI_SIZE", r);
  if (!rank && !size) return std::nullopt;
  if (!rank || !size)
    throw make_error(ErrorCode::kConfig,
                     "{} is set but {} is not; set both (tuttirun does) or neither",
                     rank ? "TUTTI_RANK" : "TUTTI_SIZE", rank ? "TUTTI_SIZE" : "TUTTI_RANK");
  r.rank = *rank;
  r.size = *size;
  set_if(r.local_rank, tutti_int("TUTTI_LOCAL_RANK", r));
  set_if(r.local_size, tutti_int("TUTTI_LOCAL_SIZE", r));
  set_if(r.cross_rank, tutti_int("TUTTI_CROSS_RANK", r));
  set_if(r.cross_size, tutti_int("TUTTI_CROSS_SIZE", r));
  return r;
}

std::optional<Reading> from_openmpi() {
  Reading r{.source = "openmpi"};
  auto rank = foreign_int("OMPI_COMM_WORLD_RANK", r, kIndex);
  auto size = foreign_int("OMPI_COMM_WORLD_SIZE", r, kCount);
  if (!rank || !size) return std::nullopt;
  r.rank = *rank;
  r.size = *size;
  set_if(r.local_rank, foreign_int("OMPI_COMM_WORLD_LOCAL_RANK", r, kIndex));
  set_if(r.local_size, foreign_int("OMPI_COMM_WORLD_LOCAL_SIZE", r, kCount));
  // NODE_RANK is the rank among all of this node's processes (across jobs), not the node's index;
  // it only stands in for the local rank when Open MPI did not give one.
  if (r.local_rank == kUnknown)
    set_if(r.local_rank, foreign_int("OMPI_COMM_WORLD_NODE_RANK", r, kIndex));
  return r;
}

std::optional<Reading> from_pmi() {
  Reading r{.source = "pmi"};
  auto rank = foreign_int("PMI_RANK", r, kIndex);
  auto size = foreign_int("PMI_SIZE", r, kCount);
  if (!rank || !size) return std::nullopt;
  r.rank = *rank;
  r.size = *size;
  set_if(r.local_rank, foreign_int("MPI_LOCALRANKID", r, kIndex));
  set_if(r.local_size, foreign_int("MPI_LOCALNRANKS", r, kCount));
  return r;
}

std::optional<Reading> from_torchrun() {
  Reading r{.source = "torchrun"};
  auto rank = foreign_int("RANK", r, kIndex);
  auto size = foreign_int("WORLD_SIZE", r, kCount);
  auto local_rank = foreign_int("LOCAL_RANK", r, kIndex);
  if (rank && size) {
    r.rank = *rank;
    r.size = *size;
    set_if(r.local_rank, local_rank);
    set_if(r.local_size, foreign_int("LOCAL_WORLD_SIZE", r, kCount));
    set_if(r.cross_rank, foreign_int("GROUP_RANK", r, kIndex));
    set_if(r.cross_size, foreign_int("GROUP_WORLD_SIZE", r, kCount));
    if (r.cross_size == kUnknown) set_if(r.cross_size, foreign_int("PET_NNODES", r, kCount));
    return r;
  }
  // Kubeflow's trainer may set only the PET_* variables meant for torchrun; when the program runs
  // without torchrun, derive the layout from them.
  auto nnodes = foreign_int("PET_NNODES", r, kCount);
  auto node_rank = foreign_int("PET_NODE_RANK", r, kIndex);
  if (!nnodes || !node_rank) return std::nullopt;
  int per_node = 1;
  if (auto nproc = env::process_value("PET_NPROC_PER_NODE")) {
    r.seen.push_back(fmt::format("PET_NPROC_PER_NODE={}", *nproc));
    try {
      per_node =
          static_cast<int>(parse::integer(*nproc, "PET_NPROC_PER_NODE", kCount.min, kCount.max));
    } catch (const Error& e) {
      throw make_error(
          ErrorCode::kConfig,
          "{}; without torchrun tutti cannot tell how many processes run per pod: start "
          "the program with torchrun or tuttirun, or set PET_NPROC_PER_NODE to a number",
          e.what());
    }
  }
  if (per_node > 1 && !local_rank)
    throw make_error(ErrorCode::kConfig,
                     "PET_NPROC_PER_NODE={} but LOCAL_RANK is not set, so this process cannot "
                     "know its rank; start the program with torchrun or tuttirun",
                     per_node);
  const int64_t ranks = int64_t{*nnodes} * per_node;
  if (ranks > env::kMaxRanks)
    throw make_error(ErrorCode::kConfig,
                     "PET_NNODES={} x PET_NPROC_PER_NODE={} makes {} ranks, more than the {} tutti "
                     "supports",
                     *nnodes, per_node, ranks, env::kMaxRanks);
  r.cross_rank = *node_rank;
  r.cross_size = *nnodes;
  r.local_rank = per_node > 1 ? *local_rank : 0;
  r.local_size = per_node;
  // Both below kMaxRanks, so the product fits; validate() then checks rank < size.
  r.rank = static_cast<int>(int64_t{*node_rank} * per_node + r.local_rank);
  r.size = static_cast<int>(ranks);
  return r;
}

// The tasks Slurm placed on node `node`, from SLURM_TASKS_PER_NODE ("2(x3),1"); nullopt for a spec
// tutti does not understand (the local size then stays unknown) or a node it does not list.
std::optional<int> slurm_tasks_on_node(const std::string& spec, int node) {
  try {
    std::vector<int> tasks = slurm::expand_tasks_per_node(spec, "SLURM_TASKS_PER_NODE");
    if (node >= 0 && static_cast<size_t>(node) < tasks.size()) return tasks[node];
  } catch (const Error&) {
  }
  return std::nullopt;
}

// The job step a Slurm task belongs to (srun sets both spellings); nullopt outside a step: in a
// batch script or an salloc shell, which see the allocation's SLURM_NTASKS and SLURM_PROCID=0.
std::optional<std::string> slurm_step() {
  if (auto step = env::process_value("SLURM_STEP_ID")) return step;
  return env::process_value("SLURM_STEPID");
}

std::optional<Reading> from_slurm() {
  Reading r{.source = "slurm"};
  auto rank = foreign_int("SLURM_PROCID", r, kIndex);
  auto size = foreign_int("SLURM_NTASKS", r, kCount);
  if (!rank || !size) return std::nullopt;
  if (!slurm_step()) {
    // Not a task of a job step: one process, whatever the allocation holds. A world of one where
    // the allocation is one task; else the user meant the allocation's tasks, which only srun (or
    // tuttirun, which starts them as tasks) can give.
    if (*size == 1) return std::nullopt;
    throw make_error(ErrorCode::kConfig,
                     "this process is not a task of a Slurm job step: it runs in the batch script "
                     "or allocation shell of job {} (SLURM_NTASKS={}, no SLURM_STEP_ID). Start the "
                     "{} ranks as tasks of the allocation: `tuttirun PROGRAM` or `srun --mpi=pmi2 "
                     "PROGRAM`",
                     env::process_value("SLURM_JOB_ID").value_or("?"), *size, *size);
  }
  r.rank = *rank;
  r.size = *size;
  set_if(r.local_rank, foreign_int("SLURM_LOCALID", r, kIndex));
  set_if(r.cross_rank, foreign_int("SLURM_NODEID", r, kIndex));
  set_if(r.cross_size, foreign_int("SLURM_NNODES", r, kCount));
  if (auto spec = env::process_value("SLURM_TASKS_PER_NODE"); spec && r.cross_rank != kUnknown)
    set_if(r.local_size, slurm_tasks_on_node(*spec, r.cross_rank));
  return r;
}

void validate(const Reading& r) {
  auto fail = [&](std::string_view problem) {
    return make_error(ErrorCode::kConfig,
                      "inconsistent {} world layout: {} ({}); check how the job was launched",
                      r.source, problem, r.variables());
  };
  if (r.size < 1) throw fail(fmt::format("world size {} must be at least 1", r.size));
  if (r.rank < 0 || r.rank >= r.size)
    throw fail(fmt::format("rank {} must be in [0, {})", r.rank, r.size));
  if (r.local_size != kUnknown && (r.local_size < 1 || r.local_size > r.size))
    throw fail(fmt::format("local size {} must be in [1, {}]", r.local_size, r.size));
  if (r.local_rank != kUnknown && r.local_rank < 0)
    throw fail(fmt::format("local rank {} is negative", r.local_rank));
  if (r.local_rank != kUnknown && r.local_size != kUnknown && r.local_rank >= r.local_size)
    throw fail(
        fmt::format("local rank {} must be below the local size {}", r.local_rank, r.local_size));
  if (r.cross_size != kUnknown && (r.cross_size < 1 || r.cross_size > r.size))
    throw fail(fmt::format("host count {} must be in [1, {}]", r.cross_size, r.size));
  if (r.cross_rank != kUnknown && r.cross_size != kUnknown &&
      (r.cross_rank < 0 || r.cross_rank >= r.cross_size))
    throw fail(fmt::format("host index {} must be in [0, {})", r.cross_rank, r.cross_size));
}

// MASTER_ADDR/MASTER_PORT (or Kubeflow's PET_ spellings). Returns "" when not given.
std::string master_address(const Reading& r) {
  auto addr = env::process_value("MASTER_ADDR");
  if (!addr) addr = env::process_value("PET_MASTER_ADDR");
  auto port_text = env::process_value("MASTER_PORT");
  const char* port_name = "MASTER_PORT";
  if (!port_text) {
    port_text = env::process_value("PET_MASTER_PORT");
    port_name = "PET_MASTER_PORT";
  }
  if (!addr || !port_text) return "";
  std::optional<int64_t> port;
  try {
    port = parse::integer(*port_text, port_name, 1, 65535);
  } catch (const Error& e) {
    throw make_error(ErrorCode::kConfig, "{}: it must be a TCP port ({} layout)", e.what(),
                     r.source);
  }
  // torchrun's agent serves its own c10d store on MASTER_PORT and tells its workers so with
  // TORCHELASTIC_USE_AGENT_STORE=True. That port is taken, so tutti's store uses the next one.
  if (auto agent = env::process_value("TORCHELASTIC_USE_AGENT_STORE");
      agent && (*agent == "True" || *agent == "true" || *agent == "1")) {
    if (*port == 65535)
      throw make_error(ErrorCode::kConfig,
                       "MASTER_PORT=65535 is used by torchrun's agent store and tutti needs the "
                       "next port for its own store; pick a lower MASTER_PORT");
    *port += 1;
  }
  return net::Endpoint{net::bare_host(*addr), static_cast<uint16_t>(*port)}.to_string();
}

std::string sanitize_id(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

// Every rank of one job must derive the same id (it names shared-memory segments), and two jobs on
// one host must not: prefer the launcher's job id, else the store address.
std::string derive_job_id(const WorldInfo& info) {
  // A job's steps can run side by side on one host (srun --exact, or two sruns in a batch
  // script): each is a world of its own and needs its own id.
  if (auto id = env::process_value("SLURM_JOB_ID")) {
    auto step = slurm_step();
    return sanitize_id("slurm-" + *id + (step ? "." + *step : ""));
  }
  if (auto id = env::process_value("TORCHELASTIC_RUN_ID")) return sanitize_id("torchrun-" + *id);
  if (auto id = env::process_value("OMPI_MCA_ess_base_jobid")) return sanitize_id("ompi-" + *id);
  if (auto id = env::process_value("PMI_JOBID")) return sanitize_id("pmi-" + *id);
  if (!info.store_address.empty()) return sanitize_id("store-" + info.store_address);
  // Ranks that meet through MPI or PMI without a launcher's id: rank 0 draws one in the store.
  if (info.size > 1 || info.numbered_at_rendezvous) return "";
  return fmt::format("local-{}", ::getpid());
}

}  // namespace

std::string default_host_id() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::string id = host.data();
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (boot && std::getline(boot, boot_id) && !boot_id.empty()) {
    id += ':';
    id.append(boot_id, 0, 8);
  }
  return id;
}

// TUTTI_* variables the settings table lacks: a typo's warning names the setting meant.
void warn_unknown_variables() {
  for (const auto& [name, near] : env::unknown_variables()) {
    if (!near.empty())
      log::warn("{} is not a tutti setting and is ignored; did you mean {}?", name, near);
    else
      log::info("{} is not a tutti setting and is ignored (docs/ENVIRONMENT.md lists them)", name);
  }
}

WorldInfo world_info_from_env() {
  // Init is where a bad TUTTI_* value must surface, not whenever something first reads it.
  env::check_all();
  std::optional<Reading> reading = from_tuttirun();
  if (!reading) reading = from_openmpi();
  if (!reading) reading = from_pmi();
  if (!reading) reading = from_torchrun();
  if (!reading) reading = from_slurm();
  bool numbered_at_rendezvous = false;
  if (!reading && env::process_value("PMI_PORT")) {
    // Hydra's -pmi-port mode: rank and size come with the answer to cmd=initack.
    reading = Reading{.source = "pmi"};
    set_if(reading->rank, foreign_int("PMI_ID", *reading, kIndex));
    reading->size = reading->rank + 1;
    numbered_at_rendezvous = true;
  }
  if (!reading) {
    reading = Reading{.source = "default"};
    reading->local_rank = 0;
    reading->local_size = 1;
    reading->cross_rank = 0;
    reading->cross_size = 1;
  }
  validate(*reading);

  WorldInfo info;
  info.numbered_at_rendezvous = numbered_at_rendezvous;
  info.source = reading->source;
  info.rank = reading->rank;
  info.size = reading->size;
  info.local_rank = reading->local_rank;
  info.local_size = reading->local_size;
  info.cross_rank = reading->cross_rank;
  info.cross_size = reading->cross_size;
  if (info.size == 1 && !numbered_at_rendezvous) {
    // A world of one needs no discovery.
    info.local_rank = info.cross_rank = 0;
    info.local_size = info.cross_size = 1;
  }

  if (auto store = env::raw("TUTTI_STORE")) {
    info.store_address = *store;
  } else {
    info.store_address = master_address(*reading);
    info.host_store = !info.store_address.empty() && info.rank == 0;
  }
  info.host_id = env::raw("TUTTI_HOST").value_or(default_host_id());
  info.job_token = env::get_string("TUTTI_JOB_TOKEN");
  info.launcher_lifeline = env::is_set("TUTTI_LAUNCHER");
  if (env::is_set("TUTTI_LAUNCH_ID")) info.launch_id = env::get_int("TUTTI_LAUNCH_ID");
  info.mpi_launcher =
      env::process_value("OMPI_COMM_WORLD_SIZE").has_value() || env::process_value("PMIX_RANK");
  if (reading->source == "pmi") {
    // The launcher's PMI connection, for a rendezvous through its key-value space.
    Reading pmi{.source = "pmi"};
    if (auto fd = foreign_int("PMI_FD", pmi, kFd)) info.pmi_fd = *fd;
    info.pmi_port = env::process_value("PMI_PORT").value_or("");
    if (auto id = foreign_int("PMI_ID", pmi, kIndex)) info.pmi_id = *id;
  }
  if (auto id = env::raw("TUTTI_JOB_ID")) {
    info.job_id = *id;
  } else {
    info.job_id = derive_job_id(info);
  }
  // tuttirun names them before it starts any rank; without it, rank 0 does (once, not per rank).
  if (!info.launcher_lifeline && info.rank == 0) warn_unknown_variables();
  return info;
}

}  // namespace tutti::bootstrap
