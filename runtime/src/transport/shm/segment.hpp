// ShmSegment: one rank's shared-memory segment in /dev/shm, holding one ring per local peer that
// writes to this rank. The owner creates it (O_EXCL, mode 0600, pre-faulted) and unlinks its name
// once every peer has mapped it, so no segment outlives the job even after kill -9.
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

  // Creates the segment with `rings` rings of ring_capacity bytes each (rounded up to a power of
  // two, at least 4 KiB). Throws Error(kSystem) naming the segment if it exists already.
  static std::unique_ptr<ShmSegment> create(const std::string& name, size_t rings,
                                            size_t ring_capacity);
  // Maps a peer's segment; `owner` names the peer for error messages.
  static std::unique_ptr<ShmSegment> open(const std::string& name, const std::string& owner);

  struct Key {  // keeps construction to create()/open()
    explicit Key() = default;
  };
  ShmSegment(Key, SharedMapping mapping) : mapping_(std::move(mapping)) {}

  // Removes the name (the mappings stay valid). Idempotent; the owner's destructor calls it too.
  void unlink() { mapping_.unlink(); }

  const std::string& name() const { return mapping_.name(); }
  size_t rings() const;
  size_t ring_capacity() const;
  // The ring at `index` (its RingControl, data after it).
  std::byte* ring(size_t index) const;

 private:
  SharedMapping mapping_;
};

}  // namespace tutti::transport
