// connect_mesh when things go wrong: ranks that never come or never connect are named, strangers
// on the data port are refused while the mesh still completes, impossible configurations fail.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>

#include "bootstrap/memory_store.hpp"
#include "core/error.hpp"
#include "net/handshake.hpp"
#include "net/socket.hpp"
#include "unit/transport/support/mesh_harness.hpp"

namespace tutti::transport {
namespace {

// The mesh works: a ring of one-byte messages, each rank receiving its predecessor's rank.
void expect_ring_works(Transport& t, int rank, int size) {
  std::byte out{static_cast<uint8_t>(rank)}, in{};
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  std::vector<Request> r = {t.channel(next).isend(make_tag(1, 0), std::span(&out, 1)),
                            t.channel(prev).irecv(make_tag(1, 0), std::span(&in, 1))};
  t.wait(r, Deadline::after_seconds(30), "ring");
  EXPECT_EQ(in, std::byte{static_cast<uint8_t>(prev)});
}

using test_support::Layout;

class MissingRankTest : public ::testing::TestWithParam<Layout> {};

TEST_P(MissingRankTest, EveryPresentRankNamesExactlyTheAbsentOnes) {
  constexpr int kSize = 6;
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("missing");
  const std::vector<int> present = {0, 1, 2, 4};  // 3 and 5 never start
  auto errors = test_support::run_ranks(static_cast<int>(present.size()), [&](int i) {
    connect_mesh(test_support::mesh_config(present[i], kSize, GetParam(), job), store,
                 Deadline::after_seconds(1.0));
  });
  for (size_t i = 0; i < present.size(); ++i) {
    ASSERT_TRUE(errors[i]) << "rank " << present[i] << " built a mesh with ranks missing";
    EXPECT_EQ(test_support::error_mismatch(errors[i], ErrorCode::kTimeout,
                                           "ranks 3, 5 (of 6) to publish"),
              "");
  }
  EXPECT_TRUE(test_support::leftover_segments(job).empty());
}

INSTANTIATE_TEST_SUITE_P(Kinds, MissingRankTest,
                         ::testing::Values(Layout::kTcp, Layout::kShm, Layout::kMixed),
                         [](const auto& info) {
                           return std::string(test_support::to_string(info.param));
                         });

TEST(MeshFailure, RankThatPublishesButNeverConnectsIsNamed) {
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("silent");
  // Rank 2 "publishes" an endpoint that nobody ever serves from.
  uint16_t port = 0;
  net::Fd silent = net::listen_tcp("127.0.0.1", 0, &port);
  store.set(job + "/tcp/2", "127.0.0.1:" + std::to_string(port));
  auto errors = test_support::run_ranks(2, [&](int rank) {
    connect_mesh(test_support::mesh_config(rank, 3, Layout::kTcp, job), store,
                 Deadline::after_seconds(1.0));
  });
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(errors[rank]);
    EXPECT_EQ(
        test_support::error_mismatch(errors[rank], ErrorCode::kTimeout, "rank 2 (of 3) to connect"),
        "");
  }
}

TEST(MeshFailure, WrongTokenOnTheDataPortIsRefusedAndTheMeshCompletes) {
  constexpr int kSize = 3;
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("token");
  std::latch stranger_connected(1);
  std::atomic<bool> refused{false};
  std::string stranger_error;
  std::thread stranger([&] {
    std::string endpoint = store.get(job + "/tcp/0", Deadline::after_seconds(30));
    net::Fd fd =
        net::connect_tcp(net::parse_endpoint(endpoint, "rank 0"), Deadline::after_seconds(30));
    // Queued in rank 0's backlog before any rank's connection: accepted first.
    stranger_connected.count_down();
    net::Hello hello{net::ConnectionKind::kData, 1, "wrong-token"};
    try {
      net::client_handshake(fd.get(), hello, Deadline::after_seconds(30), "rank 0");
    } catch (const Error& e) {
      refused = e.code() == ErrorCode::kAuth;
      stranger_error = e.what();
    }
  });
  test_support::run_ranks_or_throw(kSize, [&](int rank) {
    if (rank != 0) stranger_connected.wait();
    auto t = connect_mesh(test_support::mesh_config(rank, kSize, Layout::kTcp, job), store,
                          Deadline::after_seconds(30));
    expect_ring_works(*t, rank, kSize);
  });
  stranger.join();
  EXPECT_TRUE(refused) << "stranger got: " << stranger_error;
}

// Strangers that connect to rank 0's data port before any rank and then say nothing (or say
// garbage) are handshaken side by side with the real ranks: the mesh completes within a deadline
// shorter than what waiting for them one after another would take (6 x 5 s).
TEST(MeshFailure, IdleAndGarbageConnectionsOnTheDataPortDoNotHoldUpTheMesh) {
  constexpr int kSize = 3;
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("idle");
  std::latch strangers_connected(1);
  std::vector<net::Fd> strangers;
  std::thread stranger([&] {
    std::string endpoint = store.get(job + "/tcp/0", Deadline::after_seconds(30));
    for (int i = 0; i < 6; ++i)
      strangers.push_back(
          net::connect_tcp(net::parse_endpoint(endpoint, "rank 0"), Deadline::after_seconds(30)));
    std::string junk = "SSH-2.0-OpenSSH_9.2\r\n";
    net::write_all(strangers.back().get(), std::as_bytes(std::span(junk.data(), junk.size())),
                   Deadline::after_seconds(5), "rank 0");
    strangers_connected.count_down();
  });
  test_support::run_ranks_or_throw(kSize, [&](int rank) {
    if (rank != 0) strangers_connected.wait();
    auto t = connect_mesh(test_support::mesh_config(rank, kSize, Layout::kTcp, job), store,
                          Deadline::after_seconds(20));
    expect_ring_works(*t, rank, kSize);
  });
  stranger.join();
}

TEST(MeshFailure, SharedMemoryAcrossHostsIsAConfigError) {
  bootstrap::MemoryStore store;
  auto config = test_support::mesh_config(0, 2, Layout::kTcp, test_support::unique_job_id("cfg"));
  config.options.transport = TransportKind::kShm;
  try {
    connect_mesh(config, store, Deadline::after_seconds(1));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("TUTTI_TRANSPORT=shm"), std::string::npos) << e.what();
  }
}

TEST(MeshFailure, TcpChoiceUsesSocketsEvenOnOneHost) {
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("tcpchoice");
  test_support::run_ranks_or_throw(2, [&](int rank) {
    auto config = test_support::mesh_config(rank, 2, Layout::kShm, job);
    config.options.transport = TransportKind::kTcp;
    auto t = connect_mesh(config, store, Deadline::after_seconds(30));
    EXPECT_EQ(t->channel(1 - rank).kind(), TransportKind::kTcp);
  });
}

}  // namespace
}  // namespace tutti::transport
