// Reading TUTTI_TUNE_FILE: what is read is capped, so a wrong path cannot exhaust memory.
#include "collectives/tune_file.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"

namespace tutti::collectives {
namespace {

class TempFile {
 public:
  TempFile() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tutti-tune-XXXXXX").string();
    int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    ::close(fd);
    path_ = pattern;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string config_error_of(const std::string& path) {
  try {
    read_tune_file(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig) << e.what();
    return e.what();
  }
  return "";
}

TEST(TuneFile, AFileAboveTheCapIsRefusedNamingIt) {
  TempFile file;
  {
    // Valid JSON with a huge ignored field: without the cap it would be read and parsed.
    std::ofstream out(file.path());
    out << R"({"tutti_tune": 1, "lines": [], "padding": ")" << std::string(kMaxTuneFileBytes, 'x')
        << "\"}";
  }
  std::string m = config_error_of(file.path());
  EXPECT_NE(m.find(file.path()), std::string::npos) << m;
  EXPECT_NE(m.find("larger than 16 MiB"), std::string::npos) << m;
  EXPECT_NE(m.find("TUTTI_TUNE_FILE"), std::string::npos) << m;
}

TEST(TuneFile, AnEndlessDeviceIsRefusedNotReadForever) {
  std::string m = config_error_of("/dev/zero");
  EXPECT_NE(m.find("/dev/zero"), std::string::npos) << m;
  EXPECT_NE(m.find("larger than 16 MiB"), std::string::npos) << m;
}

TEST(TuneFile, AFileJustBelowTheCapIsRead) {
  TempFile file;
  {
    std::ofstream out(file.path());
    const std::string head = R"({"tutti_tune": 1, "lines": [], "padding": ")";
    out << head << std::string(kMaxTuneFileBytes - head.size() - 2, 'x') << "\"}";
  }
  EXPECT_TRUE(read_tune_file(file.path()).empty());
}

}  // namespace
}  // namespace tutti::collectives
