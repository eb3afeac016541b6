#include "bootstrap/memory_store.hpp"

#include <algorithm>
#include <chrono>

#include "bootstrap/cv_wait.hpp"
#include "bootstrap/store_errors.hpp"

namespace tutti::bootstrap {

void MemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

bool MemoryStore::remove(const std::string& key) {
  std::lock_guard lock(mutex_);
  return values_.erase(key) > 0;
}

std::string MemoryStore::get(const std::string& key, Deadline deadline) {
  std::unique_lock lock(mutex_);
  if (!wait_until(changed_, lock, deadline, [&] { return values_.count(key) > 0; }))
    throw get_timeout_error(describe(), key);
  return values_.at(key);
}

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  int64_t result = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = values_.find(key);
    result = add_to_counter(describe(), key, it == values_.end() ? nullptr : &it->second, delta);
    values_[key] = std::to_string(result);
  }
  changed_.notify_all();
  return result;
}

std::vector<std::string> MemoryStore::missing(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& k : keys)
    if (values_.count(k) == 0) out.push_back(k);
  return out;
}

void MemoryStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  std::unique_lock lock(mutex_);
  auto all_present = [&] {
    return std::all_of(keys.begin(), keys.end(),
                       [&](const auto& k) { return values_.count(k) > 0; });
  };
  if (wait_until(changed_, lock, deadline, all_present)) return;
  std::vector<std::string> absent;
  for (const auto& k : keys)
    if (values_.count(k) == 0) absent.push_back(k);
  throw wait_timeout_error(describe(), absent);
}

}  // namespace tutti::bootstrap
