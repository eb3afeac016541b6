// How much /dev/shm a rank's rings and a communicator's window take, as the number of ranks on a
// host grows. Without a bound, every pair of local ranks owning 1 MiB rings made the memory per
// rank grow with the local size (96 ranks filled 9 GB of /dev/shm). So each rank gets a fixed ring
// budget shared among its local peers, and each window a fixed total shared among its ranks: per
// rank, shared memory stays O(1) in the local size, and the host total grows linearly.
#pragma once

#include <cstddef>

namespace tutti::transport {

// Smallest ring: one page of data. Past budget / (4 KiB + a page of control) peers, rings stay at
// this size and the budget is exceeded (over 1,000 local ranks at the default budget).
inline constexpr size_t kMinRingCapacity = 4096;

// Capacity (a power of two) of each of the `local_peers` rings a rank owns: the configured
// `ring_bytes` (rounded up to a power of two), or less so that all of them, with their control
// pages, fit in `ring_budget`; never below kMinRingCapacity.
size_t ring_capacity_for(size_t local_peers, size_t ring_bytes, size_t ring_budget);

// Bytes of shared memory the `rings` rings of `capacity` bytes take.
size_t rings_footprint(size_t rings, size_t capacity);

// Per-rank area of a window over `ranks` local ranks: the configured `area_bytes`, or less
// (whole pages) so that the areas together fit in `window_budget`. 0 when area_bytes is 0.
size_t window_area_for(int ranks, size_t area_bytes, size_t window_budget);

}  // namespace tutti::transport
