// Real processes: a forked child rank joins the mesh through a FileStore, then dies (exits, is
// killed with SIGKILL, or aborts with a reason) while the parent waits on a receive from it. The
// parent must get kPeerFailure naming the child, over TCP and over shared memory.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "bootstrap/file_store.hpp"
#include "core/error.hpp"
#include "unit/transport/support/mesh_harness.hpp"

namespace tutti::transport {
namespace {

using test_support::Layout;

enum class Death { kExit, kKill, kAbort };

std::string_view to_string(Death d) {
  switch (d) {
    case Death::kExit:
      return "exit";
    case Death::kKill:
      return "sigkill";
    case Death::kAbort:
      return "abort";
  }
  return "?";
}

class PeerDeathTest : public ::testing::TestWithParam<std::tuple<Layout, Death>> {};

TEST_P(PeerDeathTest, ParentWaitingOnTheChildGetsPeerFailure) {
  auto [layout, death] = GetParam();
  std::string job = test_support::unique_job_id("death");
  auto dir = std::filesystem::temp_directory_path() / job;
  std::filesystem::create_directories(dir);

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child: rank 1. Only async-safe exits from here; no gtest assertions.
    int status = 0;
    try {
      bootstrap::FileStore store(dir.string());
      auto t = connect_mesh(test_support::mesh_config(1, 2, layout, job), store,
                            Deadline::after_seconds(30));
      if (death == Death::kAbort) t->abort_all("rank 1 hit a NaN in layer 7");
      if (death == Death::kKill) {
        store.set(job + "/child-ready", "1");
        pause();  // until SIGKILL
      }
    } catch (...) {
      status = 3;
    }
    _exit(status);
  }

  bootstrap::FileStore store(dir.string());
  std::unique_ptr<Transport> t;
  try {
    t = connect_mesh(test_support::mesh_config(0, 2, layout, job), store,
                     Deadline::after_seconds(30));
  } catch (...) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    throw;
  }
  if (death == Death::kKill) {
    store.get(job + "/child-ready", Deadline::after_seconds(30));
    kill(child, SIGKILL);
  }
  std::vector<std::byte> buf(64);
  std::string expected = death == Death::kAbort   ? "rank 1 aborted: rank 1 hit a NaN in layer 7"
                         : layout == Layout::kShm ? "rank 1 (pid"
                                                  : "lost connection to rank 1";
  try {
    Request r = t->channel(1).irecv(make_tag(1, 0), buf);
    t->wait(std::span(&r, 1), Deadline::after_seconds(20), "a receive from the dying child");
    ADD_FAILURE() << "the receive completed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerFailure) << e.what();
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (death != Death::kKill) {
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the child failed to join";
  }
  // Both ranks unlinked their segments once the mesh stood, before anyone died.
  EXPECT_TRUE(test_support::leftover_segments(job).empty());
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Kinds, PeerDeathTest,
                         ::testing::Combine(::testing::Values(Layout::kTcp, Layout::kShm),
                                            ::testing::Values(Death::kExit, Death::kKill,
                                                              Death::kAbort)),
                         [](const auto& info) {
                           return std::string(test_support::to_string(std::get<0>(info.param))) +
                                  "_" + std::string(to_string(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace tutti::transport
