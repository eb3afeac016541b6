#include "launcher/shm_cleanup.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"

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

// Two jobs with one --job-id on one host used to break each other; the second is refused at once,
// naming the first's pid, and the claim goes with its holder (and is not swept as a segment).
TEST(JobIdClaim, ASecondClaimOfTheSameIdIsRefusedUntilTheFirstEnds) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tuttirun-claim-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    JobIdClaim first("jobA", dir.string());
    try {
      JobIdClaim second("jobA", dir.string());
      ADD_FAILURE() << "a second claim of jobA was granted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig);
      EXPECT_NE(std::string(e.what()).find(std::to_string(::getpid())), std::string::npos)
          << e.what();
    }
    JobIdClaim other("jobB", dir.string());  // another id is free
    // No file: nothing for the sweep, nothing left if the process is killed.
    EXPECT_TRUE(std::filesystem::is_empty(dir));
  }
  JobIdClaim again("jobA", dir.string());  // the first one ended
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tutti::launcher
