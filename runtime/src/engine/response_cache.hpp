// The response cache (Horovod's idea): a name that ran before with the same specs gets a slot, the
// same on every rank, because every rank makes the same insertions and evictions in the same
// order. In steady state each rank only sets the bits of its ready slots and one bitwise-and
// allreduce tells everyone which are ready everywhere: no names cross the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/response.hpp"

namespace tutti::engine {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }
  // Slots handed out so far (never shrinks): the length of the bit vector.
  size_t slots() const { return entries_.size(); }

  // The slot of `name` when it is cached and `spec` is exactly this rank's spec of it.
  std::optional<uint32_t> slot_for(const std::string& name, const OpSpec& spec, int rank) const;
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const Response& at(uint32_t slot) const { return *entries_[slot].response; }
  bool occupied(uint32_t slot) const {
    return slot < entries_.size() && entries_[slot].response.has_value();
  }

  // Counts the changes of which name holds which slot (put, evict): a plan made of slots is good
  // while it stays the same (plan.hpp).
  uint64_t generation() const { return generation_; }

  // Marks a hit (for least-recently-used eviction).
  void touch(uint32_t slot) { entries_[slot].last_use = ++clock_; }
  // Caches a response that ran, evicting the least recently used one when full. No-op when the
  // capacity is 0.
  void put(const Response& response);
  void evict(const std::string& name);

 private:
  struct Entry {
    std::optional<Response> response;
    uint64_t last_use = 0;
  };
  size_t capacity_;
  uint64_t clock_ = 0;
  uint64_t generation_ = 0;
  std::vector<Entry> entries_;
  std::vector<uint32_t> free_;  // emptied slots, reused lowest first
  std::unordered_map<std::string, uint32_t> index_;
};

}  // namespace tutti::engine
