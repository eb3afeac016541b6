// What select_allreduce learns once per communicator: its placement (which never changes) and,
// from it and the cost model, the crossover table that answers every call after (as NCCL's tuning
// tables do): asking the model per call cost about as much as a whole 8-byte shared-memory
// allreduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "collectives/cost_model.hpp"

namespace tutti::collectives {

// The cheapest algorithm by message size: runs of sizes, each up to (and including) its first.
struct SelectionTable {
  std::vector<std::pair<size_t, Algorithm>> upto;
  Algorithm pick(size_t bytes) const;
};

// cheapest() for every size from 1 byte to 1 TiB, as runs (select.cc).
SelectionTable selection_table(const CostModel& model, const Placement& p);

struct SelectionCache {
  std::optional<Placement> placement;
  std::optional<SelectionTable> table;
  uint64_t lookups = 0;  // calls the table answered (kAuto ones)
};

}  // namespace tutti::collectives
