// What torch.distributed's `init_process_group("env://")` reads, so that a PyTorch script runs
// under tuttirun as it would under torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// GROUP_RANK, GROUP_WORLD_SIZE, and MASTER_ADDR/MASTER_PORT where rank 0 serves torch's TCPStore.
//
// MASTER_PORT must be free on rank 0's host, which only that host can tell. In local mode that is
// this host, and tuttirun picks the port. For ssh and kubexec, rank 0's agent picks a port on its
// host and publishes it, with the address of its host that reaches tuttirun's store, through that
// store; every other agent reads it before it starts its rank.
#pragma once

#include <cstdint>
#include <string>

#include "launcher/job_env.hpp"
#include "launcher/plan.hpp"

namespace tutti::launcher {

struct TorchMaster {
  std::string address;
  uint16_t port = 0;
};

// Sets the torchrun-style identity of `slot`. An inherited MASTER_ADDR/MASTER_PORT (from an
// enclosing job) is dropped unless `exports` (-x) names it: tuttirun's own values are set later,
// by set_torch_master. Also torchrun's OMP_NUM_THREADS=1 when the slot shares its host with other
// ranks and neither the environment nor -x sets it; returns whether it did (tuttirun says so once).
bool set_torch_identity(Environment& env, const std::vector<EnvExport>& exports,
                        const RankSlot& slot, int world_size);

// True when the user gave MASTER_ADDR and MASTER_PORT with -x (then tuttirun arranges nothing);
// Error(kConfig) when only one of them.
bool torch_master_exported(const std::vector<EnvExport>& exports);

void set_torch_master(Environment& env, const TorchMaster& master);

// A TCP port that nothing on this host listens on now (bound on the wildcard address, so no
// interface has it). A later bind can still race with another program: torch then fails to start
// its store, and tuttirun --restarts picks again.
uint16_t pick_free_tcp_port();

// The rank agent's side for ssh/kubexec: rank 0 picks a port here and publishes it with this
// host's address on the route to the store at `store_address`; every other rank waits for it
// (until `timeout_ms`). Sets MASTER_ADDR and MASTER_PORT in `env`. Error(kTimeout) naming rank 0
// when it never publishes.
void arrange_torch_master(Environment& env, int rank, const std::string& store_address,
                          const std::string& job_token, int64_t timeout_ms);

}  // namespace tutti::launcher
