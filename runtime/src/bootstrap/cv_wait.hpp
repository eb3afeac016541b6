// Condition-variable wait bounded by a Deadline. Waits in slices because Deadline::never() is
// time_point::max(), which condition variables do not convert safely.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/deadline.hpp"

namespace tutti::bootstrap {

// Returns pred()'s final value: false means the deadline passed first.
template <typename Pred>
bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Deadline deadline,
                Pred pred) {
  while (!pred()) {
    if (deadline.expired()) return false;
    auto slice = std::min<std::chrono::nanoseconds>(deadline.remaining(), std::chrono::seconds(1));
    cv.wait_for(lock, slice);
  }
  return true;
}

}  // namespace tutti::bootstrap
