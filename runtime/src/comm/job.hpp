// Job: what every communicator made from one world shares in this process: the store (and the
// store server when this rank hosts it), the fabric of connections, every rank's host id, the
// counter that numbers new communicators, and the launcher lifeline. The last communicator to go
// takes it down.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/mpi_session.hpp"
#include "bootstrap/node_cpus.hpp"
#include "bootstrap/pmi/pmi_client.hpp"
#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "comm/interrupt.hpp"
#include "comm/stall_watch.hpp"
#include "transport/fabric.hpp"
#include "tutti/error.hpp"

namespace tutti::comm {

struct Job {
  std::string job_id;  // namespaces the store keys and /dev/shm names of every communicator
  std::string job_token;
  std::string local_address;  // our address that reaches the store, for a later regroup()
  // How the ranks met (MPI, PMI): declared first, so they go last, after the links that use MPI
  // and the store that PMI's rendezvous named.
  std::shared_ptr<bootstrap::MpiSession> mpi;
  std::unique_ptr<bootstrap::PmiClient> pmi;
  std::unique_ptr<bootstrap::TcpStoreServer> server;  // when this rank hosts the store
  std::shared_ptr<bootstrap::Store> store;            // a SharedStore: any thread may use it
  std::shared_ptr<transport::Fabric> fabric;
  std::vector<std::string> host_ids;           // per fabric rank
  std::vector<bootstrap::NodeCpus> node_cpus;  // per fabric rank (empty: unknown)
  std::unique_ptr<bootstrap::StoreLifeline> lifeline;

  // Makes every live and later communicator's calls fail with `error` (the launcher is gone).
  void fail_all(const Error& error);
  // Registers a communicator's interrupt for fail_all; raises it at once if the job failed.
  void watch(const std::shared_ptr<Interrupt>& interrupt);
  // Adds a communicator's calls to the hang report (stall_watch.hpp), whose thread starts with
  // the first one; threshold: Options::stall_report of the first (0: none is watched).
  void watch_calls(StallWatch::Watched watched, std::chrono::milliseconds threshold);

  ~Job();

 private:
  std::mutex mutex_;
  std::vector<std::weak_ptr<Interrupt>> interrupts_;
  std::optional<Error> failure_;
  std::unique_ptr<StallWatch> stalls_;  // private, so it goes before the store it writes to
};

}  // namespace tutti::comm
