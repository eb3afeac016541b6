// Options of a communicator (Gloo's style): how it connects, which algorithm, its deadlines and
// buffer sizes. A default-constructed Options holds tutti's defaults; Options::from_env() starts
// from the TUTTI_* variables (see the README's table), which is what tutti::init() uses. A
// communicator made by split/group/dup inherits its parent's options.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#if defined(__GNUC__)
#define TUTTI_OPTIONS_API __attribute__((visibility("default")))
#else
#define TUTTI_OPTIONS_API
#endif

namespace tutti {

// Values match the collectives' numbering.
enum class Algorithm : int { kAuto = 0, kRing, kTree, kHalvingDoubling, kShm, kHierarchical };
// kMpi: MPI point-to-point to every peer (started by mpirun, or a communicator from an MPI_Comm).
enum class TransportKind : int { kAuto = 0, kTcp, kShm, kMpi };
// How an allreduce on device (CUDA) buffers runs: kAuto = NCCL's allreduce where NCCL reduces the
// type and op itself, else our ring; kNccl = NCCL's (refused for what it cannot reduce); kRing =
// our pipelined ring over NCCL send/recv with tutti's reduce kernels; kHier = NCCL within each
// host, our host ring across hosts.
enum class DeviceAllreduce : int { kAuto = 0, kNccl, kRing, kHier };

struct TUTTI_OPTIONS_API Options {
  TransportKind transport = TransportKind::kAuto;  // TUTTI_TRANSPORT
  Algorithm algorithm = Algorithm::kAuto;          // TUTTI_ALGO (allreduce)
  std::chrono::milliseconds init_timeout{60'000};  // TUTTI_TIMEOUT: joining, splitting
  std::chrono::milliseconds timeout{600'000};      // TUTTI_COLLECTIVE_TIMEOUT: each call
  // TUTTI_ETCD_LEASE_TTL: with an etcd store, how long a dead process's keys outlive it (0: no
  // lease, keys stay).
  std::chrono::seconds etcd_lease_ttl{10};
  // What a call's timeout message tells users to raise: the setting `timeout` came from (the torch
  // backend names init_process_group's timeout, since torch's rules ignore the variable).
  std::string timeout_setting = "TUTTI_COLLECTIVE_TIMEOUT";
  size_t segment_bytes = 256 << 10;  // TUTTI_SEGMENT_BYTES
  // TUTTI_TCP_SEGMENT_MAX_BYTES: a ring of 3+ ranks over TCP grows its segment with the message
  // (an eighth of a rank's block) up to this; 0 keeps segment_bytes. from_env() gives 0 when only
  // TUTTI_SEGMENT_BYTES is set, so a segment set by hand stays as set.
  size_t tcp_segment_max_bytes = 2 << 20;
  size_t shm_ring_bytes = 1 << 20;       // TUTTI_SHM_RING_BYTES
  size_t shm_ring_budget = 8 << 20;      // TUTTI_SHM_RING_BUDGET (per rank)
  size_t shm_window_bytes = 4 << 20;     // TUTTI_SHM_WINDOW_BYTES (0: no window)
  size_t shm_window_budget = 256 << 20;  // TUTTI_SHM_WINDOW_BUDGET (per window)
  std::optional<int> shm_spin_rounds;    // TUTTI_SHM_SPIN_ROUNDS (unset: by CPUs)
  std::string shm_stores = "auto";       // TUTTI_SHM_STORES: auto|cached|streaming
  int tcp_streams = 1;                   // TUTTI_TCP_STREAMS
  size_t tcp_buffer_bytes = 4 << 20;     // TUTTI_TCP_BUFFER_BYTES (0: kernel's)
  std::string tcp_congestion = "auto";   // TUTTI_TCP_CONGESTION: auto|system|<algorithm>
  size_t mpi_message_bytes = 60 << 10;   // TUTTI_MPI_MESSAGE_BYTES (transport mpi)
  std::string socket_ifname;             // TUTTI_SOCKET_IFNAME
  std::string listen_address;            // TUTTI_ADDR
  std::string tune_file;                 // TUTTI_TUNE_FILE
  std::string host_id;    // TUTTI_HOST: ranks with equal ids share memory ("": hostname + boot id)
  std::string job_token;  // TUTTI_JOB_TOKEN: every connection of the job must present it
  // TUTTI_DEVICE_ALLREDUCE: how an allreduce on device buffers runs.
  DeviceAllreduce device_allreduce = DeviceAllreduce::kAuto;
  // TUTTI_DEVICE_CHUNK_BYTES: the most bytes one step of the device ring moves in one grouped
  // NCCL send/recv (larger blocks go in chunks of this size).
  size_t device_chunk_bytes = 64 << 20;
  // TUTTI_NCCL_P2P_CHUNK_BYTES: NCCL_P2P_NET_CHUNKSIZE set (process-wide, unless already set)
  // before the first device call makes an NCCL communicator; 0 leaves NCCL's own.
  size_t nccl_p2p_chunk_bytes = 512 << 10;

  // The engine (the *_async calls: named tensors negotiated, fused and run by a background
  // thread of each communicator that uses them).
  std::chrono::microseconds cycle_time{1000};        // TUTTI_CYCLE_TIME
  size_t fusion_threshold = size_t{4} << 20;         // TUTTI_FUSION_THRESHOLD (0: no fusion)
  size_t cache_capacity = 1024;                      // TUTTI_CACHE_CAPACITY (0: no cache)
  std::chrono::milliseconds stall_warning{60'000};   // TUTTI_STALL_WARNING
  std::chrono::milliseconds stall_timeout{600'000};  // TUTTI_STALL_TIMEOUT
  bool autotune = false;                             // TUTTI_AUTOTUNE
  std::string autotune_file;                         // TUTTI_AUTOTUNE_FILE
  std::chrono::milliseconds autotune_window{500};    // TUTTI_AUTOTUNE_WINDOW
  // Namespace of a communicator created from a caller's store: the i-th create() of each process
  // meets the i-th of the others unless a name pairs them explicitly.
  std::string name;

  // The defaults above, overridden by every TUTTI_* variable that is set; Error(kConfig) on a bad
  // value.
  static Options from_env();
};

// Per-call overrides.
struct CallOptions {
  std::optional<std::chrono::milliseconds> timeout;  // instead of Options::timeout
  std::optional<Algorithm> algorithm;                // allreduce only
  // allreduce with sum or avg on floating types: every input is multiplied by prescale as it is
  // first reduced, the result by postscale as it becomes final, inside the reduce loops (no pass
  // of their own). Anything else with a factor other than 1 is Error(kInvalidArgument).
  double prescale = 1.0;
  double postscale = 1.0;
  // Device buffers (CUDA): the caller's stream (a cudaStream_t; null is the legacy default
  // stream). The call reads its inputs after the work already enqueued there, and work enqueued
  // there after the call sees its results. Ignored for host buffers.
  void* stream = nullptr;
};

}  // namespace tutti
