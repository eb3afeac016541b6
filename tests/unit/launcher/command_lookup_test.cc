#include "launcher/command_lookup.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace tutti::launcher {
namespace {

class CommandLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("tuttirun-lookup-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "bin");
    std::filesystem::create_directories(dir_ / "other");
    std::filesystem::create_directories(dir_ / "bin" / "adir");
    make_file(dir_ / "bin" / "tool", 0755);
    make_file(dir_ / "other" / "noexec", 0644);
    make_file(dir_ / "other" / "tool", 0755);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void make_file(const std::filesystem::path& p, mode_t mode) {
    std::ofstream(p) << "#!/bin/sh\n";
    ::chmod(p.c_str(), mode);
  }
  std::string path_env() const { return (dir_ / "other").string() + ":" + (dir_ / "bin").string(); }
  std::filesystem::path dir_;
};

TEST_F(CommandLookupTest, SearchesPathInOrder) {
  CommandLookup r = find_executable("tool", path_env());
  ASSERT_TRUE(r.found()) << r.problem;
  EXPECT_EQ(r.path, (dir_ / "other" / "tool").string());
}

TEST_F(CommandLookupTest, NotFoundNamesTheCommand) {
  CommandLookup r = find_executable("no-such-tool-xyz", path_env());
  EXPECT_FALSE(r.found());
  EXPECT_NE(r.problem.find("no-such-tool-xyz: command not found"), std::string::npos) << r.problem;
}

TEST_F(CommandLookupTest, NotExecutableIsSaid) {
  CommandLookup r = find_executable("noexec", path_env());
  EXPECT_FALSE(r.found());
  EXPECT_NE(r.problem.find("not executable"), std::string::npos) << r.problem;
}

TEST_F(CommandLookupTest, NotExecutableByPath) {
  CommandLookup r = find_executable((dir_ / "other" / "noexec").string(), "");
  EXPECT_FALSE(r.found());
  EXPECT_NE(r.problem.find("noexec"), std::string::npos) << r.problem;
}

TEST_F(CommandLookupTest, PathsWithSlashAreUsedAsIs) {
  CommandLookup ok = find_executable((dir_ / "bin" / "tool").string(), "");
  ASSERT_TRUE(ok.found()) << ok.problem;
  CommandLookup missing = find_executable((dir_ / "bin" / "gone").string(), path_env());
  EXPECT_FALSE(missing.found());
  EXPECT_NE(missing.problem.find("gone"), std::string::npos);
  CommandLookup directory = find_executable((dir_ / "bin" / "adir").string(), "");
  EXPECT_FALSE(directory.found());
  EXPECT_NE(directory.problem.find("is a directory"), std::string::npos) << directory.problem;
}

TEST_F(CommandLookupTest, EmptyName) {
  EXPECT_FALSE(find_executable("", path_env()).found());
}

}  // namespace
}  // namespace tutti::launcher
