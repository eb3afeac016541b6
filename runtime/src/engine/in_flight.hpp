// The names this rank has submitted and not yet finished: an enqueue of a name still in flight is
// refused. A training loop submits the same names in the same order every step, so the names of
// the engine's plan (plan.hpp) are kept in that order with a flag each: a step's enqueue finds its
// name at the cursor (one string compare), and the replay clears the flag by index. Hashing a name
// on the way in and again on the way out, in a set whose nodes the other ranks' processes have
// pushed out of the cache since, was the largest share of the engine's own CPU per tensor with 8
// ranks on 2 CPUs. Names outside the plan go into a hash set, as before.
//
// Invariant: a name is in flight if and only if it is in `others_` or it is an expected name whose
// flag is set; an expected name's flag is set whenever it is in flight, whichever way it came in.
// Not thread-safe: the engine holds its mutex around every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tutti::engine {

class InFlightNames {
 public:
  // Where an added name was recorded; given back to remove() (kept in the engine's entry).
  struct Tag {
    uint64_t generation = 0;  // of the expected names; 0: in the hash set
    uint32_t index = 0;
  };

  // False when `name` is already in flight (nothing changes).
  bool add(const std::string& name, Tag& tag);
  void remove(const std::string& name, Tag tag);
  // The names a step is expected to submit, in order (the plan's). Names in flight stay in
  // flight: those recorded by the previous expected names move to the hash set.
  void expect(std::span<const std::string> names);
  void clear();
  bool contains(const std::string& name) const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t expected_index(const std::string& name) const;

  std::vector<std::string> expected_;
  std::vector<uint8_t> flags_;                            // one per expected name: in flight
  std::unordered_map<std::string_view, uint32_t> index_;  // views into expected_
  uint32_t cursor_ = 0;                                   // where the next name probably is
  uint64_t generation_ = 1;

  std::unordered_set<std::string> others_;
  // others_'s nodes of finished names, reused by the next adds (with their strings' capacity):
  // in steady state a name outside the plan costs no allocation either. At most kMaxSpareNodes.
  static constexpr size_t kMaxSpareNodes = 4096;
  std::vector<std::unordered_set<std::string>::node_type> spare_;
};

}  // namespace tutti::engine
