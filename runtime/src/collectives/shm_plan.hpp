// How the shared-memory allreduce cuts a message: into chunks that each fill one slot of every
// rank's window area, and each chunk into one slice per rank (the part that rank reduces). Every
// rank derives the same plan from the window size, the world size and the element size, so they
// agree on every chunk's place without talking.
#pragma once

#include <algorithm>
#include <cstddef>

namespace tutti::collectives {

struct ShmPlan {
  size_t element_bytes = 0;
  size_t slot_bytes = 0;            // one chunk of the message, all slices together
  size_t slots = 0;                 // slots per rank area, >= kMinSlots
  size_t chunk_elements = 0;        // elements per full chunk
  size_t single_step_elements = 0;  // messages up to this take the single-step path
};

struct Slice {
  size_t first = 0;  // elements from the chunk's start
  size_t count = 0;
};

// The pipeline keeps up to three chunks in flight (staging, reducing, copying out), so a rank's
// area must hold three before it reuses the first.
inline constexpr size_t kMinSlots = 3;
// Each rank's slice of a chunk should stay in its L2 while it is staged, reduced and copied out,
// yet be large enough to amortize one flag round trip per stage.
inline constexpr size_t kSliceTargetBytes = 64 << 10;
inline constexpr size_t kMinChunkBytes = 128 << 10;
inline constexpr size_t kMaxChunkBytes = 512 << 10;
// Up to here one flag round (everyone stages, everyone reduces everything) beats three rounds.
inline constexpr size_t kSingleStepBytes = 8 << 10;
// Whole cache lines of whole elements of every size (64 * 8).
inline constexpr size_t kSlotAlign = 512;

inline ShmPlan plan_shm(size_t area_bytes, int size, size_t element_bytes) {
  ShmPlan p;
  p.element_bytes = element_bytes;
  size_t want =
      std::clamp(static_cast<size_t>(size) * kSliceTargetBytes, kMinChunkBytes, kMaxChunkBytes);
  size_t fit = area_bytes / kMinSlots;
  // Slots must sit at the same offsets for every element size: chunk counters run on across calls
  // of different types, and a slot's reuse check assumes the previous occupant used the same bytes.
  p.slot_bytes = std::max(std::min(want, fit) / kSlotAlign * kSlotAlign, kSlotAlign);
  p.slots = area_bytes / p.slot_bytes;
  p.chunk_elements = p.slot_bytes / element_bytes;
  p.single_step_elements = std::min(kSingleStepBytes, p.slot_bytes) / element_bytes;
  return p;
}

// Rank `rank`'s slice of a chunk of n elements: balanced, with boundaries on 64-byte multiples so
// no two ranks' slices share a cache line.
inline Slice slice_of(size_t n, int size, int rank, size_t element_bytes) {
  size_t unit = std::max<size_t>(1, 64 / element_bytes);
  size_t units = (n + unit - 1) / unit;
  auto start = [&](int r) {
    size_t base = units / static_cast<size_t>(size), rem = units % static_cast<size_t>(size);
    size_t u = static_cast<size_t>(r) * base + std::min(static_cast<size_t>(r), rem);
    return std::min(n, u * unit);
  };
  size_t first = start(rank);
  return {first, start(rank + 1) - first};
}

}  // namespace tutti::collectives
