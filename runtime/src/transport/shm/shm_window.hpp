// The LocalWindow half of connect_mesh, used when every rank of the world shares this host's
// memory. Rank 0 creates the window segment and publishes "<job>/window/0" = "<segment> <area
// bytes>" (or "failed: <why>" when it could not); the others map it and say so
// ("<job>/window-mapped/<rank>"); once all have, rank 0 unlinks the name.
#pragma once

#include <memory>
#include <string>

#include "transport/local_window.hpp"
#include "transport/mesh_rendezvous.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {

// Busy-wait rounds before yielding when TUTTI_SHM_SPIN_ROUNDS is unset: spin only when every local
// rank can have a CPU of its own, since a spinning waiter otherwise steals the CPU from the rank it
// waits for. `host_cpus`: the CPUs the host's ranks may run on together (the union of their
// affinity masks, within their quota); 0 counts this process's own affinity mask instead, which
// for a rank bound to one core (mpirun's default) says 1 however many cores its peers have.
int default_spin_rounds(int local_ranks, int host_cpus);

// Builds the window of `area_bytes` per rank; every rank of the world must call it. When rank 0
// cannot create it in /dev/shm, every rank throws its error, or, where the window is not
// required (config.shm_window_required), returns null with the reason in `why_none`.
std::unique_ptr<LocalWindow> connect_local_window(const MeshContext& context, Transport& transport,
                                                  size_t area_bytes, int spin_rounds,
                                                  std::string& why_none);

}  // namespace tutti::transport
