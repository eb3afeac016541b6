// Helpers shared by the net tests (and, through unit/bootstrap/support, the bootstrap tests): free
// ports, waiting for a condition another thread brings about.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "core/deadline.hpp"
#include "net/socket.hpp"

namespace tutti::net::testing {

// A port that was free a moment ago (the listener is closed again before returning).
inline uint16_t free_port() {
  uint16_t port = 0;
  Fd fd = listen_tcp("127.0.0.1", 0, &port);
  return port;
}

// Polls pred until it holds or the deadline passes; for state another thread updates after
// telling us (e.g. a server counting a refusal after sending the verdict).
template <typename Pred>
bool eventually(Pred pred, Deadline deadline = Deadline::after(std::chrono::seconds(10))) {
  while (!pred()) {
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace tutti::net::testing
