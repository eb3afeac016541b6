// SharedMapping: a named /dev/shm file mapped into this process. The creator makes it (O_EXCL, mode
// 0600), zero-fills it so every page is allocated and faulted now (a first touch costs ~1 us per
// 4 KiB, which must not land in a collective), and unlinks the name as soon as every peer has
// mapped it, so nothing is left in /dev/shm even if the job is killed later. Both the ring segments
// and the LocalWindow's segment are built on it; they only add their own headers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tutti::transport {

class SharedMapping {
 public:
  // Creates `name` with `bytes` bytes. `what` ("segment", "window") and `knob` (the TUTTI_* setting
  // that sizes it) make the errors say what to change.
  static SharedMapping create(const std::string& name, size_t bytes, std::string_view what,
                              std::string_view knob);
  // Maps all of an existing `name`; `owner` names the rank that created it, `hint` what to do when
  // it cannot be opened (typically: that rank does not share this host's /dev/shm).
  static SharedMapping open(const std::string& name, const std::string& owner,
                            std::string_view hint);

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

 private:
  SharedMapping(std::string name, std::byte* base, size_t bytes, bool linked);
  void release();

  std::string name_;
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  bool linked_ = false;  // only the creator unlinks
};

}  // namespace tutti::transport
