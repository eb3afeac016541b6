// Runs the ranks of a one-host world as threads of this process, each with a real mesh (shared-
// memory channels and the LocalWindow) built through one MemoryStore, so the shm allreduce runs on
// the same window code as in a job.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

#include "collectives/context.hpp"
#include "collectives/scratch.hpp"
#include "collectives/settings.hpp"
#include "transport/transport.hpp"

namespace tutti::testing {

struct ShmRank {
  int rank;
  int size;
  transport::Transport& transport;
  collectives::Scratch& scratch;
  uint64_t sequence = 0;
  const collectives::Settings* settings = nullptr;  // null: the defaults

  // A context for the next collective call; every rank must call it once per collective.
  collectives::Context context(double timeout_seconds = 60);
};

// window_bytes: the per-rank window area (small values force messages through many slot reuses).
// Returns each rank's exception (null where it returned). A failing rank sends an abort notice so
// the others fail fast; every rank keeps its mesh until all are done.
std::vector<std::exception_ptr> run_shm_world(int size, size_t window_bytes,
                                              const std::function<void(ShmRank&)>& body);

}  // namespace tutti::testing
