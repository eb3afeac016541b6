// What select_allreduce learns once per communicator: its placement (which never changes) and
// the last decision. Working it out again costs about as much as a whole 8-byte shared-memory
// allreduce, so a communicator keeps one of these and hands it to every call's Context.
#pragma once

#include <cstddef>
#include <optional>

#include "collectives/cost_model.hpp"

namespace tutti::collectives {

struct SelectionCache {
  std::optional<Placement> placement;
  bool logged = false;  // the decision table went out (or this rank does not print it)
  std::optional<size_t> last_bytes;
  Algorithm last = Algorithm::kRing;
};

}  // namespace tutti::collectives
