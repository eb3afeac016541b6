// Which Scratch slot each use of scratch memory takes. Uses within one collective call must not
// share a slot; different calls may, because calls on one Context run one at a time.
#pragma once

#include <cstddef>

namespace tutti::collectives {

inline constexpr size_t kStagingSlot = 0;  // incoming segments before they are reduced
inline constexpr size_t kPartialSlot = 1;  // reduce_scatter's intermediate partial sums
inline constexpr size_t kResultSlot = 2;   // a rooted reduce's result on ranks other than the root

}  // namespace tutti::collectives
