// Every allreduce algorithm, each declared once (as Horovod's operation_manager lists its ops): its
// name (TUTTI_ALGO's, the tuning file's and the logs' spelling), where it can run, its modeled
// time (the cost model's formula) and the function that runs it. Selection, the cost model's
// candidates, the names and allreduce's dispatch all read this table. Its last entry is the
// device path: a call whose buffers are on a device (Context::device) takes it, and it picks
// among its own paths (device_collectives.hpp, TUTTI_DEVICE_ALLREDUCE).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "collectives/collectives.hpp"
#include "collectives/cost_model.hpp"

namespace tutti::collectives {

struct AllreduceAlgorithm {
  // kAuto for the device entry: where the buffers live chooses it, never TUTTI_ALGO.
  Algorithm id;
  std::string_view name;
  // Whether it can run on the placement (given more than one rank).
  bool (*applies)(const Placement& p);
  // Whether the hierarchical algorithm may run it among one leader per host (a flat algorithm).
  bool between_leaders;
  // Modeled seconds for `bytes` on the placement (cost_model.hpp's model:: formulas); null for
  // the device entry, which selection never weighs against the host algorithms.
  double (*model_time)(const CostModel& m, double bytes, const Placement& p);
  void (*run)(Context& ctx, const void* send, void* recv, size_t count, DataType type, ReduceOp op);
};

// The host algorithms, in the enum's order (kAuto is no entry: it is the choice among these).
std::span<const AllreduceAlgorithm> allreduce_algorithms();
// The entry of `id`, or null for kAuto and values no entry has.
const AllreduceAlgorithm* find_allreduce(Algorithm id);
// The device entry (the table's last): runs a call whose Context::device is set.
const AllreduceAlgorithm& device_allreduce();

}  // namespace tutti::collectives
