// ShmSegment: one rank's shared-memory segment in /dev/shm, holding one ring per local peer that
// writes to this rank. The owner creates it (O_EXCL, mode 0600, allocated and mapped up front) and
// unlinks its name once every peer has mapped its ring, so no segment outlives the job even after
// kill -9. A peer maps only the one ring it writes, not the whole segment: with N local ranks each
// process then maps O(N) ring bytes rather than O(N^2).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "transport/shm/shared_mapping.hpp"

namespace tutti::transport {

class ShmSegment {
 public:
  // "/tutti-<job_id>-<rank>", with characters that may not appear in a name replaced.
  static std::string name_for(const std::string& job_id, int rank);

  // Creates the segment with `rings` rings of ring_capacity bytes each (a power of two, at least
  // 4 KiB). Throws Error(kSystem) naming the segment if it exists already, or naming the size and
  // /dev/shm's free space when it does not fit.
  static std::unique_ptr<ShmSegment> create(const std::string& name, size_t rings,
                                            size_t ring_capacity, const SegmentPurpose& purpose);
  // Maps ring `index` of a peer's segment; `owner` names the peer for error messages.
  static std::unique_ptr<ShmSegment> open_ring(const std::string& name, const std::string& owner,
                                               size_t index);

  struct Key {  // keeps construction to create()/open_ring()
    explicit Key() = default;
  };
  // The mapping holds rings first_ring.. first_ring + mapped_rings - 1 from byte rings_offset on.
  ShmSegment(Key, SharedMapping mapping, size_t rings_offset, size_t first_ring,
             size_t mapped_rings, size_t ring_capacity, size_t ring_stride);

  // Removes the name (the mappings stay valid). Idempotent; the owner's destructor calls it too.
  void unlink() { mapping_.unlink(); }

  const std::string& name() const { return mapping_.name(); }
  size_t ring_capacity() const { return ring_capacity_; }
  // The ring at `index` (its RingControl, data after it); it must be one this process mapped.
  std::byte* ring(size_t index) const;

 private:
  SharedMapping mapping_;
  std::byte* first_ring_base_;
  size_t first_ring_;
  size_t mapped_rings_;
  size_t ring_capacity_;
  size_t ring_stride_;
};

}  // namespace tutti::transport
