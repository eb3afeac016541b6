// Doorbells on a shared-memory ring: a consumer that sleeps on an empty ring is woken by the
// producer's write from another process, a producer that sleeps on a full ring by the consumer's
// read; a sleeper that finds bytes or room already there does not sleep; a sleep with nothing
// moving ends at its timeout; and every sleeper count is lowered after. Through a transport: a
// rank that waits for a slow peer on the same host sleeps instead of burning its CPU.
#include "transport/shm/doorbell.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "bootstrap/memory_store.hpp"
#include "transport/shm/ring.hpp"
#include "transport/shm/segment.hpp"
#include "unit/transport/support/mesh_harness.hpp"

namespace tutti::transport {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPeerDelay = std::chrono::milliseconds(100);
constexpr long kLongSleepNs = 10'000'000'000;  // far beyond the peer's delay

std::string test_name(const char* what) {
  return fmt::format("/tutti-unit-{}-bell-{}", getpid(), what);
}

SegmentPurpose purpose() {
  return {"rank 0", "a test's ring", "TUTTI_SHM_RING_BUDGET"};
}

uint32_t sleepers(const std::byte* ring, bool head_side) {
  const auto* control = reinterpret_cast<const RingControl*>(ring);
  return head_side ? control->head_sleepers : control->tail_sleepers;
}

// Runs `peer` in a child process after kPeerDelay (a real other process, as a rank is) and returns
// its pid; the child exits 0 when `peer` returned.
template <typename Fn>
pid_t in_child(Fn&& peer) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::this_thread::sleep_for(kPeerDelay);
    peer();
    _exit(0);
  }
  return pid;
}

void expect_child_ok(pid_t pid) {
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Sleeps on `bells` while `peer` moves a ring in another process, and checks that the sleep lasted
// until the move (not returning at once) and that the move ended it (not the long timeout).
template <typename Fn>
void expect_woken_by(std::span<const Doorbell> bells, Fn&& peer) {
  const pid_t child = in_child(peer);
  const auto start = Clock::now();
  ASSERT_TRUE(sleep_on_doorbells(bells, kLongSleepNs));
  const auto slept = Clock::now() - start;
  expect_child_ok(child);
  EXPECT_GE(slept, kPeerDelay / 2);
  EXPECT_LT(slept, std::chrono::seconds(5));
}

TEST(Doorbell, AConsumerOnAnEmptyRingSleepsUntilAnotherProcessWrites) {
  const std::string name = test_name("read");
  auto own = ShmSegment::create(name, 1, 4096, purpose());
  ShmRing reader(own->ring(0), own->ring_capacity());
  Doorbell bell;
  ASSERT_TRUE(reader.arm_reader(bell));
  EXPECT_EQ(sleepers(own->ring(0), true), 1u);
  expect_woken_by(std::span(&bell, 1), [&] {
    ShmRing writer(own->ring(0), own->ring_capacity());
    const std::vector<std::byte> bytes(100, std::byte{3});
    const std::span<const std::byte> piece(bytes);
    if (writer.write(ConstPieces(&piece, 1)) != 100) _exit(1);
  });
  EXPECT_EQ(reader.available(), 100u);
  EXPECT_EQ(sleepers(own->ring(0), true), 0u);
}

TEST(Doorbell, AProducerOnAFullRingSleepsUntilAnotherProcessReads) {
  const std::string name = test_name("write");
  auto own = ShmSegment::create(name, 1, 4096, purpose());
  ShmRing writer(own->ring(0), own->ring_capacity());
  const std::vector<std::byte> bytes(4096, std::byte{5});
  const std::span<const std::byte> piece(bytes);
  ASSERT_EQ(writer.write(ConstPieces(&piece, 1)), 4096u);
  Doorbell bell;
  ASSERT_TRUE(writer.arm_writer(bell));
  EXPECT_EQ(sleepers(own->ring(0), false), 1u);
  expect_woken_by(std::span(&bell, 1), [&] {
    ShmRing reader(own->ring(0), own->ring_capacity());
    std::vector<std::byte> got(1000);
    const std::span<std::byte> into(got);
    if (reader.read(Pieces(&into, 1)) != 1000) _exit(1);
  });
  EXPECT_EQ(writer.room(), 1000u);
  EXPECT_EQ(sleepers(own->ring(0), false), 0u);
}

TEST(Doorbell, BytesOrRoomAlreadyThereMeanNoSleep) {
  const std::string name = test_name("ready");
  auto own = ShmSegment::create(name, 1, 4096, purpose());
  ShmRing writer(own->ring(0), own->ring_capacity());
  ShmRing reader(own->ring(0), own->ring_capacity());
  Doorbell bell;
  EXPECT_TRUE(writer.arm_writer(bell) == false);  // an empty ring has room
  EXPECT_EQ(sleepers(own->ring(0), false), 0u);
  const std::vector<std::byte> bytes(10, std::byte{1});
  const std::span<const std::byte> piece(bytes);
  ASSERT_EQ(writer.write(ConstPieces(&piece, 1)), 10u);
  EXPECT_FALSE(reader.arm_reader(bell));  // bytes wait to be read
  EXPECT_EQ(sleepers(own->ring(0), true), 0u);
}

TEST(Doorbell, ASleepWithNothingMovingEndsAtItsTimeout) {
  const std::string name = test_name("timeout");
  auto own = ShmSegment::create(name, 1, 4096, purpose());
  ShmRing reader(own->ring(0), own->ring_capacity());
  Doorbell bell;
  ASSERT_TRUE(reader.arm_reader(bell));
  const auto start = Clock::now();
  ASSERT_TRUE(sleep_on_doorbells(std::span(&bell, 1), 50'000'000));
  const auto slept = Clock::now() - start;
  EXPECT_GE(slept, std::chrono::milliseconds(40));
  EXPECT_LT(slept, std::chrono::seconds(5));
  EXPECT_EQ(sleepers(own->ring(0), true), 0u);
}

TEST(Doorbell, ASleeperOnSeveralRingsWakesForAnyOfThem) {
  const std::string name = test_name("several");
  auto own = ShmSegment::create(name, 3, 4096, purpose());
  std::vector<ShmRing> readers;
  std::vector<Doorbell> bells(3);
  for (size_t i = 0; i < 3; ++i) {
    readers.emplace_back(own->ring(i), own->ring_capacity());
    ASSERT_TRUE(readers.back().arm_reader(bells[i]));
  }
  expect_woken_by(bells, [&] {
    ShmRing writer(own->ring(2), own->ring_capacity());
    const std::vector<std::byte> bytes(1, std::byte{9});
    const std::span<const std::byte> piece(bytes);
    if (writer.write(ConstPieces(&piece, 1)) != 1) _exit(1);
  });
  EXPECT_EQ(readers[2].available(), 1u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sleepers(own->ring(i), true), 0u) << "ring " << i;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST(Doorbell, ARankWaitingOnASlowPeerSleeps) {
  constexpr auto kSlow = std::chrono::milliseconds(400);
  bootstrap::MemoryStore store;
  const std::string job = test_support::unique_job_id("bell");
  double waited_cpu = 0;
  double waited_wall = 0;
  test_support::run_ranks_or_throw(2, [&](int rank) {
    auto config = test_support::mesh_config(rank, 2, test_support::Layout::kShm, job);
    auto t = connect_mesh(config, store, Deadline::after_seconds(30));
    std::vector<std::byte> message(64 << 10, std::byte{7});
    if (rank == 0) {
      std::this_thread::sleep_for(kSlow);
      Request sent = t->channel(1).isend(make_tag(1, 0), message);
      t->wait(std::span(&sent, 1), Deadline::after_seconds(30), "the slow send");
      return;
    }
    std::vector<std::byte> got(message.size());
    Request received = t->channel(0).irecv(make_tag(1, 0), got);
    const double cpu = thread_cpu_seconds();
    const auto start = Clock::now();
    t->wait(std::span(&received, 1), Deadline::after_seconds(30), "the slow peer's message");
    waited_cpu = thread_cpu_seconds() - cpu;
    waited_wall = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_EQ(got, message);
  });
  // Yielding for the whole wait would take about as much CPU as the wall time on an idle core.
  EXPECT_GT(waited_wall, 0.2);
  EXPECT_LT(waited_cpu, 0.25 * waited_wall)
      << "waited " << waited_wall << " s, using " << waited_cpu << " s of CPU";
}

}  // namespace
}  // namespace tutti::transport
