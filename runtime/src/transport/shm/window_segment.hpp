// WindowSegment: the one /dev/shm segment behind a LocalWindow, mapped by every rank of the world.
// The creator sizes it, pre-faults every page (a first touch costs ~1 us per 4 KiB, which must not
// land in a collective) and unlinks the name once every rank has mapped it, so nothing is left in
// /dev/shm even if the job is killed later.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "transport/shm/shared_mapping.hpp"

namespace tutti::transport {

class WindowSegment {
 public:
  // "/tutti-<job_id>-window" (the launcher's clean-up glob "tutti-<job>-*" covers it).
  static std::string name_for(const std::string& job_id);

  // Creates (O_EXCL, mode 0600) a zeroed, allocated and mapped segment of `bytes` usable bytes;
  // Error(kSystem) naming the size and /dev/shm's free space when it does not fit.
  static std::unique_ptr<WindowSegment> create(const std::string& name, size_t bytes,
                                               const SegmentPurpose& purpose);
  // Maps a segment another rank created with exactly `bytes` usable bytes; `owner` names that rank.
  static std::unique_ptr<WindowSegment> open(const std::string& name, size_t bytes,
                                             const std::string& owner);

  struct Key {  // keeps construction to create()/open()
    explicit Key() = default;
  };
  WindowSegment(Key, SharedMapping mapping) : mapping_(std::move(mapping)) {}

  // Removes the name (the mappings stay valid). Idempotent; the creator's destructor calls it too.
  void unlink() { mapping_.unlink(); }

  const std::string& name() const { return mapping_.name(); }
  // The usable bytes (after the segment's own header page), page-aligned.
  std::byte* data() const;

 private:
  SharedMapping mapping_;
};

}  // namespace tutti::transport
