#include "collectives/allreduce_registry.hpp"

#include <array>

#include "collectives/device/device_collectives.hpp"

namespace tutti::collectives {
namespace {

bool always(const Placement&) {
  return true;
}

// The window exists only when every rank shares one host (transport/local_window.hpp).
bool has_window(const Placement& p) {
  return p.window;
}

// Worth a phase on each host and one across hosts only with several of each.
bool several_hosts_and_one_shared(const Placement& p) {
  return p.hosts > 1 && p.max_local > 1;
}

bool never(const Placement&) {
  return false;
}

// The device path: DeviceCollectives chooses NCCL's allreduce, our ring over NCCL or the
// hierarchical one (TUTTI_DEVICE_ALLREDUCE), orders the call after the caller's stream, and checks
// the call's agreement with the others itself.
void device_path(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                 ReduceOp op) {
  ctx.device->allreduce(ctx, *ctx.device_call, send, recv, count, type, op);
}

constexpr std::array kEntries = {
    AllreduceAlgorithm{Algorithm::kRing, "ring", always, true, model::ring, ring_allreduce},
    AllreduceAlgorithm{Algorithm::kTree, "tree", always, true, model::tree, tree_allreduce},
    AllreduceAlgorithm{Algorithm::kHalvingDoubling, "hd", always, true, model::halving_doubling,
                       halving_doubling_allreduce},
    AllreduceAlgorithm{Algorithm::kShm, "shm", has_window, false, model::window, shm_allreduce},
    AllreduceAlgorithm{Algorithm::kHierarchical, "hier", several_hosts_and_one_shared, false,
                       model::hierarchical, hierarchical_allreduce},
    // Last: where the buffers live chooses it (Context::device), not selection or TUTTI_ALGO.
    AllreduceAlgorithm{Algorithm::kAuto, "device", never, false, nullptr, device_path},
};
constexpr size_t kHostAlgorithms = kEntries.size() - 1;

// find_allreduce indexes by the enum's value.
constexpr bool in_enum_order() {
  for (size_t i = 0; i < kHostAlgorithms; ++i)
    if (static_cast<size_t>(kEntries[i].id) != i + 1) return false;
  return kEntries.back().id == Algorithm::kAuto && kEntries.back().model_time == nullptr;
}
static_assert(in_enum_order(),
              "host entries in Algorithm's order, from kRing (kAuto is none); the device's last");

}  // namespace

std::span<const AllreduceAlgorithm> allreduce_algorithms() {
  return std::span(kEntries).first(kHostAlgorithms);
}

const AllreduceAlgorithm* find_allreduce(Algorithm id) {
  const auto index = static_cast<size_t>(id);
  return index >= 1 && index <= kHostAlgorithms ? &kEntries[index - 1] : nullptr;
}

const AllreduceAlgorithm& device_allreduce() {
  return kEntries.back();
}

}  // namespace tutti::collectives
