// SharedMapping: a named /dev/shm file mapped into this process. The creator makes it (O_EXCL, mode
// 0600) and allocates every page up front with fallocate, so a /dev/shm too small for the job is a
// clear error at startup, never a SIGBUS in the middle of a collective; its pages are mapped now
// (MAP_POPULATE), since a first touch costs ~1 us per 4 KiB and must not land in a collective. The
// creator unlinks the name as soon as every peer has mapped it, so nothing is left in /dev/shm even
// if the job is killed later. Peers may map just the part they use. Both the ring segments and the
// LocalWindow's segment are built on it; they only add their own headers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tutti::transport {

// What a segment is for, so that errors say who asked for how much of what, and what to change.
struct SegmentPurpose {
  std::string owner;  // "rank 3"
  std::string what;   // "its rings (127 peers x 64 KiB)"
  std::string knob;   // the TUTTI_* settings that size it
};

class SharedMapping {
 public:
  // Creates `name` with `bytes` bytes, all allocated and zero. Error(kSystem) naming the size asked
  // for and /dev/shm's free space when it does not fit.
  static SharedMapping create(const std::string& name, size_t bytes, const SegmentPurpose& purpose);
  // Maps `length` bytes at `offset` (page-aligned) of an existing `name`; length 0 maps from offset
  // to the end. `owner` names the rank that created it, `hint` what to do when it cannot be opened
  // (typically: that rank does not share this host's /dev/shm).
  static SharedMapping open(const std::string& name, const std::string& owner,
                            std::string_view hint, size_t offset = 0, size_t length = 0);

  SharedMapping(SharedMapping&& other) noexcept;
  SharedMapping& operator=(SharedMapping&& other) noexcept;
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping();

  // Removes the name (the mappings stay valid). Idempotent; the creator's destructor calls it too.
  void unlink();

  const std::string& name() const { return name_; }
  std::byte* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  // Size of the whole file (more than bytes() when only a part is mapped).
  size_t file_bytes() const { return file_bytes_; }

 private:
  SharedMapping(std::string name, std::byte* base, size_t bytes, size_t file_bytes, bool linked);
  void release();

  std::string name_;
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  size_t file_bytes_ = 0;
  bool linked_ = false;  // only the creator unlinks
};

}  // namespace tutti::transport
