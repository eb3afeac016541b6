// Options of a communicator (Gloo's style): how it connects, which algorithm, its deadlines and
// buffer sizes. A default-constructed Options holds tutti's defaults; Options::from_env() starts
// from the TUTTI_* variables (docs/ENVIRONMENT.md), which is what tutti::init() uses. A
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

// Every field but the last two is one TUTTI_* variable's: its default, range and meaning are that
// variable's row of tutti's one settings table (runtime/src/core/env.cc, docs/ENVIRONMENT.md),
// which the constructor and from_env() read; nothing else declares them.
struct TUTTI_OPTIONS_API Options {
  TransportKind transport;                 // TUTTI_TRANSPORT
  Algorithm algorithm;                     // TUTTI_ALGO (allreduce)
  std::chrono::milliseconds init_timeout;  // TUTTI_TIMEOUT: joining, splitting
  std::chrono::milliseconds timeout;       // TUTTI_COLLECTIVE_TIMEOUT: each call
  std::chrono::milliseconds stall_report;  // TUTTI_STALL_REPORT (0: off)
  std::chrono::seconds etcd_lease_ttl;     // TUTTI_ETCD_LEASE_TTL (0: no lease)
  size_t segment_bytes;                    // TUTTI_SEGMENT_BYTES
  size_t tcp_segment_max_bytes;            // TUTTI_TCP_SEGMENT_MAX_BYTES (0: segment_bytes)
  size_t shm_ring_bytes;                   // TUTTI_SHM_RING_BYTES
  size_t shm_ring_budget;                  // TUTTI_SHM_RING_BUDGET (per rank)
  size_t shm_window_bytes;                 // TUTTI_SHM_WINDOW_BYTES (0: no window)
  size_t shm_window_budget;                // TUTTI_SHM_WINDOW_BUDGET (per window)
  std::optional<int> shm_spin_rounds;      // TUTTI_SHM_SPIN_ROUNDS (unset: by CPUs)
  std::string shm_stores;                  // TUTTI_SHM_STORES: auto|cached|streaming
  int tcp_streams;                         // TUTTI_TCP_STREAMS
  size_t tcp_buffer_bytes;                 // TUTTI_TCP_BUFFER_BYTES (0: kernel's)
  std::string tcp_congestion;              // TUTTI_TCP_CONGESTION: auto|system|<algorithm>
  size_t mpi_message_bytes;                // TUTTI_MPI_MESSAGE_BYTES (transport mpi)
  std::string socket_ifname;               // TUTTI_SOCKET_IFNAME
  std::string listen_address;              // TUTTI_ADDR
  std::string tune_file;                   // TUTTI_TUNE_FILE
  std::string host_id;                     // TUTTI_HOST ("": hostname + boot id)
  std::string job_token;                   // TUTTI_JOB_TOKEN
  DeviceAllreduce device_allreduce;        // TUTTI_DEVICE_ALLREDUCE
  size_t device_chunk_bytes;               // TUTTI_DEVICE_CHUNK_BYTES
  size_t nccl_p2p_chunk_bytes;             // TUTTI_NCCL_P2P_CHUNK_BYTES (0: NCCL's own)

  // The engine (the *_async calls: named tensors negotiated, fused and run by a background
  // thread of each communicator that uses them).
  std::chrono::microseconds cycle_time;       // TUTTI_CYCLE_TIME
  size_t fusion_threshold;                    // TUTTI_FUSION_THRESHOLD (0: no fusion)
  size_t cache_capacity;                      // TUTTI_CACHE_CAPACITY (0: no cache)
  std::chrono::milliseconds stall_warning;    // TUTTI_STALL_WARNING
  std::chrono::milliseconds stall_timeout;    // TUTTI_STALL_TIMEOUT
  bool autotune;                              // TUTTI_AUTOTUNE
  std::string autotune_file;                  // TUTTI_AUTOTUNE_FILE
  std::chrono::milliseconds autotune_window;  // TUTTI_AUTOTUNE_WINDOW

  // What a call's timeout message tells users to raise: the setting `timeout` came from (the torch
  // backend names init_process_group's timeout, since torch's rules ignore the variable).
  std::string timeout_setting = "TUTTI_COLLECTIVE_TIMEOUT";
  // Namespace of a communicator created from a caller's store: the i-th create() of each process
  // meets the i-th of the others unless a name pairs them explicitly.
  std::string name;

  // tutti's defaults (each variable's default in the settings table).
  Options();
  // The defaults, overridden by every TUTTI_* variable that is set; Error(kConfig) on a bad
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
  // Device buffers: the call returns once its work is enqueued on `stream` (after the ranks agreed
  // on the host), as NCCL's calls do, instead of once it completed; the host goes on to its next
  // call while the device works. What fails after the return (a peer died, NCCL's asynchronous
  // error, the call's deadline) is thrown by the communicator's next device call, device_done()
  // or device_wait(). Ignored for host buffers, which are done when the call returns.
  bool enqueue_only = false;
};

}  // namespace tutti
