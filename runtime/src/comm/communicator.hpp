// Communicator: one rank's membership in a world. It owns the store connection, the transport
// (every channel), reusable scratch memory and the collective sequence number, and runs
// collectives synchronously. The first failed collective aborts the peers (so they fail promptly
// with the reason instead of waiting for a timeout) and leaves the communicator broken: every later
// call rethrows that error.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store_factory.hpp"
#include "bootstrap/world_info.hpp"
#include "collectives/collectives.hpp"
#include "collectives/selection_cache.hpp"
#include "comm/topology.hpp"
#include "transport/transport.hpp"
#include "tutti/error.hpp"
#include "tutti/types.hpp"

namespace tutti::comm {

struct Settings {
  double init_timeout_s = 60;
  double collective_timeout_s = 600;
  collectives::Algorithm algorithm = collectives::Algorithm::kAuto;
  size_t segment_bytes = 256 << 10;
  size_t shm_ring_bytes = 1 << 20;
  std::string transport = "auto";
  std::string listen_address;  // empty: the address that reaches the store

  static Settings from_env();
};

class Communicator {
 public:
  // Joins the world `info` describes. Throws Error(kTimeout) listing ranks that never arrived.
  static std::unique_ptr<Communicator> create(const bootstrap::WorldInfo& info,
                                              const Settings& settings);
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Topology& topology() const { return topology_; }
  const std::string& job_id() const { return job_id_; }

  void allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op);
  void broadcast(void* buf, size_t count, DataType type, int root);
  void allgather(const void* send, void* recv, size_t count, DataType type);
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op);
  void barrier();

 private:
  struct Key {
    explicit Key() = default;
  };

 public:
  explicit Communicator(Key) {}  // only create() can make a Key

 private:
  // Runs one collective call: refuses a second thread, stamps the call's signature on the
  // transport (so ranks in different calls fail with kMismatch), and breaks the communicator on a
  // failure other than a bad argument.
  template <typename Body>
  void run(std::string_view name, transport::CallSignature call, Body&& body);

  int rank_ = 0;
  int size_ = 1;
  Topology topology_;
  std::vector<int> host_of_rank_;  // every rank's host index, for the collectives' Context
  std::string job_id_;
  Settings settings_;
  bootstrap::StoreConnection store_;
  std::unique_ptr<bootstrap::StoreLifeline> lifeline_;
  std::unique_ptr<transport::Transport> transport_;
  collectives::Scratch scratch_;
  collectives::SelectionCache selection_;
  uint64_t sequence_ = 0;
  std::optional<Error> failure_;
  std::atomic<bool> busy_{false};
};

}  // namespace tutti::comm
