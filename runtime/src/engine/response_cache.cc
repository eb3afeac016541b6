#include "engine/response_cache.hpp"

#include <algorithm>
#include <functional>

namespace tutti::engine {

bool Response::has_joined(int rank) const {
  return std::find(joined.begin(), joined.end(), rank) != joined.end();
}

std::optional<uint32_t> ResponseCache::slot_for(const std::string& name, const OpSpec& spec,
                                                int rank) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  if (!(entries_[it->second].response->spec_of(rank) == spec)) return std::nullopt;
  return it->second;
}

void ResponseCache::put(const Response& response) {
  if (capacity_ == 0) return;
  evict(response.name);
  uint32_t slot;
  if (!free_.empty()) {
    auto lowest = std::min_element(free_.begin(), free_.end());
    slot = *lowest;
    free_.erase(lowest);
  } else if (entries_.size() < capacity_) {
    slot = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  } else {
    // Full: the least recently used slot (lowest index on a tie), the same choice on every rank.
    slot = 0;
    for (uint32_t s = 1; s < entries_.size(); ++s)
      if (entries_[s].last_use < entries_[slot].last_use) slot = s;
    index_.erase(entries_[slot].response->name);
  }
  entries_[slot].response = response;
  entries_[slot].last_use = ++clock_;
  index_[response.name] = slot;
  ++generation_;
}

void ResponseCache::evict(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) return;
  entries_[it->second].response.reset();
  free_.push_back(it->second);
  index_.erase(it);
  ++generation_;
}

}  // namespace tutti::engine
