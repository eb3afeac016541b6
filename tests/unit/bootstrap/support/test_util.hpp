// Helpers shared by the bootstrap tests: temporary directories, free ports, waiting for a
// condition.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "bootstrap/socket.hpp"
#include "core/deadline.hpp"

namespace tutti::bootstrap::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tutti-bootstrap-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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

}  // namespace tutti::bootstrap::testing
