#include "launcher/shm_cleanup.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tutti::launcher {
namespace {

TEST(ShmCleanup, RemovesOnlyThisJobsSegments) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tuttirun-shm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "tutti-job1-subdir");
  for (const char* name : {"tutti-job1-ring-0-1", "tutti-job1-x", "tutti-job10-ring", "tutti-job1",
                           "other-job1-x", "tutti-job2-ring"})
    std::ofstream(dir / name) << "x";
  EXPECT_EQ(remove_job_segments("job1", dir.string()), 2u);
  EXPECT_FALSE(std::filesystem::exists(dir / "tutti-job1-ring-0-1"));
  EXPECT_FALSE(std::filesystem::exists(dir / "tutti-job1-x"));
  for (const char* kept :
       {"tutti-job10-ring", "tutti-job1", "other-job1-x", "tutti-job2-ring", "tutti-job1-subdir"})
    EXPECT_TRUE(std::filesystem::exists(dir / kept)) << kept;
  EXPECT_EQ(remove_job_segments("", dir.string()), 0u);
  EXPECT_EQ(remove_job_segments("job1", (dir / "missing").string()), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tutti::launcher
