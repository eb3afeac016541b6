// A cycle's plan, kept for replay. A training loop submits the same gradients, in the same order,
// with the same specs, every step; once a step ran entirely from the response cache, the next
// step that matches it (this rank's submissions, name by name and in order) skips the per-name
// work of a cycle: no look-ups in the pending table or the cache, no copies of responses, no
// fusion decisions. It still sets its cache bits and runs the cycle's bitwise-and allreduce; only
// when that and equals the plan's bits exactly (every rank ready with exactly these names, none
// announcing anything) does it replay. Otherwise the names wait for their bits as they would have
// without the plan, so a rank that replays and one that does not reach the same decisions (the
// cache's recency included), and anything that differs on any rank falls back within the cycle.
// A plan outlives the cycles that do not match it (a step cut in two, an empty cycle): each later
// cycle is held to it, and it is good while the cache's slots name the same tensors (the cache's
// generation); a cycle that changed the cache drops it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/operation.hpp"
#include "engine/response.hpp"
#include "tutti/options.hpp"

namespace tutti::engine {

struct Plan {
  // This rank's submissions of the cycle that made the plan, in the order they arrived.
  std::vector<std::string> names;
  std::vector<OpSpec> specs;
  // The cycle's bit vector: word 0 bit 0 ("nothing to announce"), then the cache slots' bits.
  std::vector<uint64_t> bits;
  // Each name's cache slot, and the slots in the order the negotiation touches them (ascending).
  std::vector<uint32_t> entry_slots;
  std::vector<uint32_t> slots;
  // What runs, in order: indices into names; a group of two or more is one fused allreduce.
  std::vector<std::vector<uint32_t>> groups;
  size_t fusion_threshold = 0;    // what the groups were made for
  uint64_t cache_generation = 0;  // the response cache's, whose slots these are

  bool valid() const { return !names.empty(); }
  void clear() {
    names.clear();
    specs.clear();
    bits.clear();
    entry_slots.clear();
    slots.clear();
    groups.clear();
  }
};

// An allreduce's call options from its spec (its prescale and postscale).
CallOptions scaled(const OpSpec& s);

// How a cycle's responses run, in order: allreduces of one dtype, op and scales are packed
// together up to `threshold` bytes; everything else runs alone. Indices into `responses`.
std::vector<std::vector<size_t>> fusion_groups(const std::vector<Response>& responses,
                                               size_t threshold);

}  // namespace tutti::engine
