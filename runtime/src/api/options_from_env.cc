// Options::from_env: the one place where the TUTTI_* settings become a communicator's Options.
// Below this layer nothing reads the environment (tests/static/check_layers.sh enforces it).
#include <chrono>
#include <cmath>

#include "collectives/collectives.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "net/congestion.hpp"
#include "tutti/options.hpp"

namespace tutti {
namespace {

std::chrono::milliseconds milliseconds(std::string_view name) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(env::get_seconds(name)));
}

DeviceAllreduce device_allreduce_named(const std::string& name) {
  if (name == "nccl") return DeviceAllreduce::kNccl;
  if (name == "ring") return DeviceAllreduce::kRing;
  if (name == "hier") return DeviceAllreduce::kHier;
  return DeviceAllreduce::kAuto;
}

TransportKind transport_named(const std::string& name) {
  if (name == "tcp") return TransportKind::kTcp;
  if (name == "shm") return TransportKind::kShm;
  if (name == "mpi") return TransportKind::kMpi;
  return TransportKind::kAuto;
}

}  // namespace

Options Options::from_env() {
  Options o;
  o.transport = transport_named(env::get_choice("TUTTI_TRANSPORT"));
  // The collectives' own parser (the same names, the same error); the enums agree by value
  // (static_asserts in comm/communicator.cc).
  o.algorithm = static_cast<Algorithm>(collectives::parse_algorithm(env::get_choice("TUTTI_ALGO")));
  o.device_allreduce = device_allreduce_named(env::get_choice("TUTTI_DEVICE_ALLREDUCE"));
  o.device_chunk_bytes = env::get_bytes("TUTTI_DEVICE_CHUNK_BYTES");
  o.nccl_p2p_chunk_bytes = env::get_bytes("TUTTI_NCCL_P2P_CHUNK_BYTES");
  o.init_timeout = milliseconds("TUTTI_TIMEOUT");
  o.etcd_lease_ttl = std::chrono::seconds(
      static_cast<int64_t>(std::ceil(env::get_seconds("TUTTI_ETCD_LEASE_TTL"))));
  o.timeout = milliseconds("TUTTI_COLLECTIVE_TIMEOUT");
  o.segment_bytes = env::get_bytes("TUTTI_SEGMENT_BYTES");
  if (o.segment_bytes == 0) throw make_error(ErrorCode::kConfig, "TUTTI_SEGMENT_BYTES must be > 0");
  o.tcp_segment_max_bytes =
      env::is_set("TUTTI_SEGMENT_BYTES") && !env::is_set("TUTTI_TCP_SEGMENT_MAX_BYTES")
          ? 0
          : env::get_bytes("TUTTI_TCP_SEGMENT_MAX_BYTES");
  o.shm_ring_bytes = env::get_bytes("TUTTI_SHM_RING_BYTES");
  o.shm_ring_budget = env::get_bytes("TUTTI_SHM_RING_BUDGET");
  o.shm_window_bytes = env::get_bytes("TUTTI_SHM_WINDOW_BYTES");
  o.shm_window_budget = env::get_bytes("TUTTI_SHM_WINDOW_BUDGET");
  if (env::is_set("TUTTI_SHM_SPIN_ROUNDS"))
    o.shm_spin_rounds = static_cast<int>(env::get_int("TUTTI_SHM_SPIN_ROUNDS"));
  o.shm_stores = env::get_choice("TUTTI_SHM_STORES");
  o.tcp_streams = static_cast<int>(env::get_int("TUTTI_TCP_STREAMS"));
  o.tcp_buffer_bytes = env::get_bytes("TUTTI_TCP_BUFFER_BYTES");
  o.tcp_congestion = env::get_string("TUTTI_TCP_CONGESTION");
  (void)net::parse_congestion(o.tcp_congestion, "TUTTI_TCP_CONGESTION");  // a typo fails at init
  o.mpi_message_bytes = env::get_bytes("TUTTI_MPI_MESSAGE_BYTES");
  o.socket_ifname = env::get_string("TUTTI_SOCKET_IFNAME");
  o.listen_address = env::get_string("TUTTI_ADDR");
  o.tune_file = env::get_string("TUTTI_TUNE_FILE");
  o.host_id = env::get_string("TUTTI_HOST");
  o.job_token = env::get_string("TUTTI_JOB_TOKEN");
  o.cycle_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::duration<double>(env::get_seconds("TUTTI_CYCLE_TIME")));
  o.fusion_threshold = env::get_bytes("TUTTI_FUSION_THRESHOLD");
  o.cache_capacity = static_cast<size_t>(env::get_int("TUTTI_CACHE_CAPACITY"));
  o.stall_warning = milliseconds("TUTTI_STALL_WARNING");
  o.stall_timeout = milliseconds("TUTTI_STALL_TIMEOUT");
  o.autotune = env::get_bool("TUTTI_AUTOTUNE");
  o.autotune_file = env::get_string("TUTTI_AUTOTUNE_FILE");
  o.autotune_window = milliseconds("TUTTI_AUTOTUNE_WINDOW");
  return o;
}

}  // namespace tutti
