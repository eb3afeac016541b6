#include "collectives/allreduce_registry.hpp"

#include <array>

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

constexpr std::array kAlgorithms = {
    AllreduceAlgorithm{Algorithm::kRing, "ring", always, true, model::ring, ring_allreduce},
    AllreduceAlgorithm{Algorithm::kTree, "tree", always, true, model::tree, tree_allreduce},
    AllreduceAlgorithm{Algorithm::kHalvingDoubling, "hd", always, true, model::halving_doubling,
                       halving_doubling_allreduce},
    AllreduceAlgorithm{Algorithm::kShm, "shm", has_window, false, model::window, shm_allreduce},
    AllreduceAlgorithm{Algorithm::kHierarchical, "hier", several_hosts_and_one_shared, false,
                       model::hierarchical, hierarchical_allreduce},
};

// find_allreduce indexes by the enum's value.
constexpr bool in_enum_order() {
  for (size_t i = 0; i < kAlgorithms.size(); ++i)
    if (static_cast<size_t>(kAlgorithms[i].id) != i + 1) return false;
  return true;
}
static_assert(in_enum_order(), "entries in Algorithm's order, from kRing (kAuto is none)");

}  // namespace

std::span<const AllreduceAlgorithm> allreduce_algorithms() {
  return kAlgorithms;
}

const AllreduceAlgorithm* find_allreduce(Algorithm id) {
  const auto index = static_cast<size_t>(id);
  return index >= 1 && index <= kAlgorithms.size() ? &kAlgorithms[index - 1] : nullptr;
}

}  // namespace tutti::collectives
