// Turns a Deadline into a poll() timeout. Rounds up so that a wait never returns just before the
// deadline and spins, and caps the value so loops re-check their state now and then.
#pragma once

#include <chrono>

#include "core/deadline.hpp"

namespace tutti::net {

inline int poll_timeout_ms(Deadline deadline, int cap_ms = 60'000) {
  auto left = deadline.remaining();
  if (left > std::chrono::milliseconds(cap_ms)) return cap_ms;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(ms);
}

}  // namespace tutti::net
