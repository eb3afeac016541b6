#include "engine/in_flight.hpp"

#include <algorithm>
#include <utility>

namespace tutti::engine {

uint32_t InFlightNames::expected_index(const std::string& name) const {
  if (cursor_ < expected_.size() && expected_[cursor_] == name) return cursor_;
  if (index_.empty()) return kNone;
  const auto it = index_.find(name);
  return it == index_.end() ? kNone : it->second;
}

bool InFlightNames::add(const std::string& name, Tag& tag) {
  if (const uint32_t i = expected_index(name); i != kNone) {
    if (flags_[i] != 0) return false;
    flags_[i] = 1;
    cursor_ = i + 1 == expected_.size() ? 0 : i + 1;
    tag = {generation_, i};
    return true;
  }
  bool fresh;
  if (spare_.empty()) {
    fresh = others_.insert(name).second;
  } else {
    auto node = std::move(spare_.back());
    spare_.pop_back();
    node.value() = name;  // reuses the node's string capacity
    auto inserted = others_.insert(std::move(node));
    fresh = inserted.inserted;
    if (!fresh) spare_.push_back(std::move(inserted.node));
  }
  if (fresh) tag = {0, 0};
  return fresh;
}

void InFlightNames::remove(const std::string& name, Tag tag) {
  if (tag.generation == generation_) {
    flags_[tag.index] = 0;
    return;
  }
  // In the hash set: added outside the expected names, or moved there by expect(). An expected
  // name's flag follows it.
  auto node = others_.extract(name);
  if (node.empty()) return;
  if (spare_.size() < kMaxSpareNodes) spare_.push_back(std::move(node));
  if (const uint32_t i = expected_index(name); i != kNone) flags_[i] = 0;
}

void InFlightNames::expect(std::span<const std::string> names) {
  if (std::equal(names.begin(), names.end(), expected_.begin(), expected_.end())) return;
  for (size_t i = 0; i < expected_.size(); ++i)
    if (flags_[i] != 0) others_.insert(expected_[i]);
  index_.clear();
  expected_.assign(names.begin(), names.end());
  flags_.assign(expected_.size(), 0);
  for (size_t i = 0; i < expected_.size(); ++i) {
    if (!index_.emplace(expected_[i], static_cast<uint32_t>(i)).second) {
      // A name twice would have two flags: no expected names then (cannot come from a plan,
      // whose names were in flight together).
      index_.clear();
      expected_.clear();
      flags_.clear();
      break;
    }
    if (others_.contains(expected_[i])) flags_[i] = 1;
  }
  cursor_ = 0;
  ++generation_;  // tags of the names moved to others_ no longer match
}

void InFlightNames::clear() {
  others_.clear();
  std::fill(flags_.begin(), flags_.end(), uint8_t{0});
}

bool InFlightNames::contains(const std::string& name) const {
  if (const uint32_t i = expected_index(name); i != kNone) return flags_[i] != 0;
  return others_.contains(name);
}

}  // namespace tutti::engine
