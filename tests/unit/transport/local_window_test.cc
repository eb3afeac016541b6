// LocalWindow: built by connect_mesh exactly when every rank shares memory; every rank sees every
// other rank's area and counters (threads of one process and forked processes); waits hand over
// data in order with and without spinning, time out naming the missing ranks, and fail with
// kPeerFailure naming a rank that aborted, exited or was killed while another waited for it.
#include "transport/local_window.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "bootstrap/file_store.hpp"
#include "bootstrap/memory_store.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "transport/shm/shm_window.hpp"
#include "unit/transport/support/mesh_harness.hpp"

namespace tutti::transport {
namespace {

using test_support::Layout;

constexpr size_t kAreaBytes = 64 << 10;

MeshConfig window_config(int rank, int size, Layout layout, const std::string& job,
                         size_t area_bytes = kAreaBytes, int spin_rounds = 0) {
  MeshConfig c = test_support::mesh_config(rank, size, layout, job);
  c.options.shm_window_bytes = area_bytes;
  c.options.shm_spin_rounds = spin_rounds;
  return c;
}

// Runs body(rank, transport) on every rank of a fresh world of `size` threads.
void run_world(int size, Layout layout, size_t area_bytes, int spin_rounds,
               const std::function<void(int, Transport&)>& body, std::string* job_out = nullptr) {
  const std::string job = test_support::unique_job_id("window");
  if (job_out) *job_out = job;
  bootstrap::MemoryStore store;
  test_support::run_ranks_or_throw(size, [&](int rank) {
    auto t = connect_mesh(window_config(rank, size, layout, job, area_bytes, spin_rounds), store,
                          Deadline::after_seconds(30));
    body(rank, *t);
  });
}

class WindowWorldTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

// Each rank fills its area, publishes, and checks every other rank's area: one memory for all.
TEST_P(WindowWorldTest, EveryRankSeesEveryArea) {
  const auto [size, spin] = GetParam();
  std::string job;
  run_world(
      size, Layout::kShm, kAreaBytes, spin,
      [&](int rank, Transport& t) {
        LocalWindow* w = t.local_window();
        ASSERT_NE(w, nullptr) << t.no_local_window_reason();
        EXPECT_EQ(w->rank(), rank);
        EXPECT_EQ(w->size(), size);
        EXPECT_EQ(w->area_bytes(), kAreaBytes);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(w->area(rank)) % 4096, 0u);
        for (int i = 0; i < LocalWindow::kFlags; ++i) EXPECT_EQ(w->own_flag(i), 0u);
        auto mine = test_support::pattern(rank, -1, kAreaBytes);
        std::memcpy(w->area(rank), mine.data(), kAreaBytes);
        EXPECT_FALSE(w->peers_reached(2, 1));  // nobody ever publishes counter 2 here
        w->publish(1, 1);
        EXPECT_EQ(w->own_flag(1), 1u);
        w->wait_peers(1, 1, Deadline::after_seconds(20), "the area exchange");
        EXPECT_TRUE(w->peers_reached(1, 1));
        EXPECT_FALSE(w->peers_reached(1, 2));
        for (int r = 0; r < size; ++r) {
          auto expected = test_support::pattern(r, -1, kAreaBytes);
          EXPECT_EQ(std::memcmp(w->area(r), expected.data(), kAreaBytes), 0)
              << "rank " << rank << " reading rank " << r << "'s area";
        }
        // Nobody may leave (and unmap) before everyone has read.
        w->publish(2, 1);
        w->wait_peers(2, 1, Deadline::after_seconds(20), "the exit barrier");
      },
      &job);
  EXPECT_TRUE(test_support::leftover_segments(job).empty());
}

INSTANTIATE_TEST_SUITE_P(Sizes, WindowWorldTest,
                         ::testing::Combine(::testing::Values(2, 3, 4, 8),
                                            ::testing::Values(0, 2000)),
                         [](const auto& info) {
                           return fmt::format("np{}_spin{}", std::get<0>(info.param),
                                              std::get<1>(info.param));
                         });

// Counters carry data in order: in round k each rank writes k into its area, publishes k, and
// must find k in every other area after waiting for k; then waits until all have read before
// overwriting (a sequence of generations, as a collective uses them).
class WindowHandoverTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(WindowHandoverTest, ManyGenerationsArriveInOrder) {
  const auto [size, spin] = GetParam();
  constexpr uint64_t kRounds = 2000;
  run_world(size, Layout::kShm, kAreaBytes, spin, [&](int rank, Transport& t) {
    LocalWindow* w = t.local_window();
    ASSERT_NE(w, nullptr);
    auto* words = reinterpret_cast<uint64_t*>(w->area(rank));
    for (uint64_t k = 1; k <= kRounds; ++k) {
      w->wait_peers(1, k - 1, Deadline::after_seconds(20), "readers of the last round");
      for (size_t i = 0; i < 64; ++i) words[i] = k * 1000 + i;
      w->publish(0, k);
      w->wait_peers(0, k, Deadline::after_seconds(20), "writers");
      for (int r = 0; r < size; ++r) {
        const auto* theirs = reinterpret_cast<const uint64_t*>(w->area(r));
        for (size_t i = 0; i < 64; i += 21)
          ASSERT_EQ(theirs[i], k * 1000 + i) << "rank " << rank << " round " << k << " from " << r;
      }
      w->publish(1, k);
    }
    w->wait_peers(1, kRounds, Deadline::after_seconds(20), "the last readers");
  });
}

// Spinning only where ranks fit the CPUs: with more ranks than CPUs a spinning waiter holds the
// CPU until the next tick (milliseconds per round).
INSTANTIATE_TEST_SUITE_P(Sizes, WindowHandoverTest,
                         ::testing::Values(std::tuple{2, 0}, std::tuple{2, 2000}, std::tuple{3, 0},
                                           std::tuple{4, 0}, std::tuple{5, 0}),
                         [](const auto& info) {
                           return fmt::format("np{}_spin{}", std::get<0>(info.param),
                                              std::get<1>(info.param));
                         });

TEST(LocalWindowTest, NoWindowUnlessEveryRankSharesMemory) {
  struct Case {
    int size;
    Layout layout;
    size_t bytes;
    std::string reason;
  };
  for (const Case& c : {Case{1, Layout::kShm, kAreaBytes, "one rank"},
                        Case{2, Layout::kTcp, kAreaBytes, "over tcp"},
                        Case{4, Layout::kMixed, kAreaBytes, "over tcp"},
                        Case{3, Layout::kShm, 0, "TUTTI_SHM_WINDOW_BYTES=0"}}) {
    run_world(c.size, c.layout, c.bytes, 0, [&](int, Transport& t) {
      EXPECT_EQ(t.local_window(), nullptr) << c.reason;
      EXPECT_NE(t.no_local_window_reason().find(c.reason), std::string::npos)
          << t.no_local_window_reason();
    });
  }
}

// Size and spinning are what the config says; unset spinning depends on the CPUs.
TEST(LocalWindowTest, SizeAndSpinningComeFromTheConfig) {
  struct Case {
    size_t bytes;
    std::optional<int> spin;
    int want_spin;
  };
  for (const Case& c : {Case{128 << 10, 0, 0}, Case{96 << 10, 77, 77},
                        Case{64 << 10, std::nullopt, default_spin_rounds(2, 0)}}) {
    const std::string job = test_support::unique_job_id("cfg");
    bootstrap::MemoryStore store;
    test_support::run_ranks_or_throw(2, [&](int rank) {
      MeshConfig config = window_config(rank, 2, Layout::kShm, job);
      config.options.shm_window_bytes = c.bytes;
      config.options.shm_spin_rounds = c.spin;
      auto t = connect_mesh(config, store, Deadline::after_seconds(30));
      ASSERT_NE(t->local_window(), nullptr) << t->no_local_window_reason();
      EXPECT_EQ(t->local_window()->area_bytes(), c.bytes);
      EXPECT_EQ(t->local_window()->spin_rounds(), c.want_spin);
    });
  }
}

TEST(LocalWindowTest, TooSmallWindowIsAConfigError) {
  bootstrap::MemoryStore store;
  try {
    connect_mesh(window_config(0, 2, Layout::kShm, test_support::unique_job_id("small"), 4096),
                 store, Deadline::after_seconds(5));
    ADD_FAILURE() << "a 4 KiB window was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("TUTTI_SHM_WINDOW_BYTES"), std::string::npos) << e.what();
  }
}

TEST(LocalWindowTest, SpinsOnlyWhenEveryRankHasACpu) {
  // Unknown host CPUs: this process's affinity mask decides.
  EXPECT_GT(default_spin_rounds(1, 0), 0);
  EXPECT_EQ(default_spin_rounds(100000, 0), 0);
  // The host's ranks' CPUs together decide, whatever this process's own mask holds: two ranks
  // bound to a core each (mpirun's default) spin; two ranks on one CPU between them yield.
  EXPECT_GT(default_spin_rounds(2, 2), 0);
  EXPECT_GT(default_spin_rounds(4, 8), 0);
  EXPECT_EQ(default_spin_rounds(2, 1), 0);
  EXPECT_EQ(default_spin_rounds(8, 4), 0);
}

// A wait nobody answers ends at the deadline with kTimeout naming the wait and the silent ranks;
// one long enough to reach the napping phase (after 1 s) ends there too.
TEST(LocalWindowTest, WaitTimesOutNamingTheMissingRanks) {
  for (double seconds : {0.2, 1.3}) {
    run_world(3, Layout::kShm, kAreaBytes, 100, [&](int rank, Transport& t) {
      LocalWindow* w = t.local_window();
      ASSERT_NE(w, nullptr);
      if (rank == 1) w->publish(0, 1);  // only rank 1 arrives
      if (rank != 0) {
        w->publish(2, 1);
        return;
      }
      w->wait_peers(2, 1, Deadline::after_seconds(20), "the others' start");
      try {
        w->wait_peers(0, 1, Deadline::after_seconds(seconds), "the test's flag");
        ADD_FAILURE() << "the wait returned";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kTimeout);
        std::string what = e.what();
        EXPECT_NE(what.find("the test's flag"), std::string::npos) << what;
        EXPECT_NE(what.find("rank 2"), std::string::npos) << what;
        EXPECT_EQ(what.find("rank 1 "), std::string::npos) << what;
      }
    });
  }
}

// An abort notice from any peer ends a window wait with that peer's reason.
TEST(LocalWindowTest, AbortNoticeEndsTheWait) {
  run_world(3, Layout::kShm, kAreaBytes, 0, [&](int rank, Transport& t) {
    LocalWindow* w = t.local_window();
    ASSERT_NE(w, nullptr);
    if (rank == 2) {
      t.abort_all("rank 2 found a NaN");
      w->publish(1, 1);
      return;
    }
    try {
      w->wait_peers(0, 1, Deadline::after_seconds(20), "a flag that never comes");
      ADD_FAILURE() << "the wait returned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerFailure) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 2 found a NaN"), std::string::npos) << e.what();
    }
  });
}

// Real processes: the child (rank 1) writes its area and publishes; the parent checks the bytes,
// then waits for a flag the child never sets while the child exits or is killed: kPeerFailure
// naming rank 1, long before the deadline.
enum class Death { kExit, kKill };

class WindowPeerDeathTest : public ::testing::TestWithParam<Death> {};

TEST_P(WindowPeerDeathTest, ParentSeesChildDataThenItsDeath) {
  const Death death = GetParam();
  const std::string job = test_support::unique_job_id("wdeath");
  auto dir = std::filesystem::temp_directory_path() / job;
  std::filesystem::create_directories(dir);
  const auto payload = test_support::pattern(1, 0, kAreaBytes);

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 0;
    try {
      bootstrap::FileStore store(dir.string());
      auto t =
          connect_mesh(window_config(1, 2, Layout::kShm, job), store, Deadline::after_seconds(30));
      LocalWindow* w = t->local_window();
      if (w == nullptr) _exit(4);
      std::memcpy(w->area(1), payload.data(), payload.size());
      w->publish(0, 1);
      w->wait_peers(0, 1, Deadline::after_seconds(30), "the parent's check");
      if (death == Death::kKill) pause();  // until SIGKILL
    } catch (...) {
      status = 3;
    }
    _exit(status);
  }

  bootstrap::FileStore store(dir.string());
  std::unique_ptr<Transport> t;
  try {
    t = connect_mesh(window_config(0, 2, Layout::kShm, job), store, Deadline::after_seconds(30));
  } catch (...) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    throw;
  }
  LocalWindow* w = t->local_window();
  ASSERT_NE(w, nullptr) << t->no_local_window_reason();
  w->wait_peers(0, 1, Deadline::after_seconds(30), "the child's data");
  EXPECT_EQ(std::memcmp(w->area(1), payload.data(), payload.size()), 0);
  EXPECT_TRUE(test_support::leftover_segments(job).empty());
  w->publish(0, 1);
  if (death == Death::kKill) {
    usleep(20'000);
    kill(child, SIGKILL);
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    w->wait_peers(1, 1, Deadline::after_seconds(60), "a flag the child never sets");
    ADD_FAILURE() << "the wait returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerFailure) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1 "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a flag the child never sets"), std::string::npos)
        << e.what();
  }
  // Not a timing assertion on speed, only that death was seen rather than the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(50));
  int status = 0;
  waitpid(child, &status, 0);
  if (death == Death::kExit) {
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Deaths, WindowPeerDeathTest, ::testing::Values(Death::kExit, Death::kKill),
                         [](const auto& info) {
                           return std::string(info.param == Death::kExit ? "exit" : "sigkill");
                         });

}  // namespace
}  // namespace tutti::transport
