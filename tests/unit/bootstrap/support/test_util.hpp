// Helpers shared by the bootstrap tests: temporary directories, and the net tests' free ports and
// waiting for a condition.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "unit/net/support/test_util.hpp"

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

using net::testing::eventually;
using net::testing::free_port;

}  // namespace tutti::bootstrap::testing
