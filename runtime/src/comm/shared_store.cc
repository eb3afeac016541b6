#include "comm/shared_store.hpp"

#include <chrono>

#include "comm/interrupt.hpp"
#include "core/error.hpp"

namespace tutti::comm {
namespace {

// The longest one wait holds the store: short enough that another thread is not held up long,
// long enough that a waiting rank sends the store server a handful of requests a second.
constexpr auto kWaitSlice = std::chrono::milliseconds(50);

}  // namespace

void SharedStore::set(const std::string& key, const std::string& value) {
  std::lock_guard lock(mutex_);
  inner_->set(key, value);
}

int64_t SharedStore::add(const std::string& key, int64_t delta) {
  std::lock_guard lock(mutex_);
  return inner_->add(key, delta);
}

std::vector<std::string> SharedStore::missing(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  return inner_->missing(keys);
}

bool SharedStore::remove(const std::string& key) {
  std::lock_guard lock(mutex_);
  return inner_->remove(key);
}

void SharedStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  for (;;) {
    const Deadline slice = Deadline::after(kWaitSlice).earlier(deadline);
    try {
      std::lock_guard lock(mutex_);
      inner_->wait(keys, slice);
      return;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout || deadline.expired()) throw;
    }
    CallScope::check();
  }
}

std::string SharedStore::get(const std::string& key, Deadline deadline) {
  wait({key}, deadline);
  std::lock_guard lock(mutex_);
  return inner_->get(key, deadline);
}

}  // namespace tutti::comm
