// TUTTI_TCP_STREAMS: several TCP connections per pair of ranks behind one Channel. Messages of
// every size (below, at and above the cut, odd lengths) and many tags in flight arrive whole and in
// per-tag order for 1 to 4 streams; a peer that goes away fails the waiter naming the peer.
#include "transport/tcp/striped_channel.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "bootstrap/memory_store.hpp"
#include "core/error.hpp"
#include "unit/transport/support/mesh_harness.hpp"

namespace tutti::transport {
namespace {

using test_support::Layout;

// A TCP mesh config with `streams` connections per pair (Options::tcp_streams).
MeshConfig striped_config(int rank, int size, const std::string& job, int streams) {
  MeshConfig c = test_support::mesh_config(rank, size, Layout::kTcp, job);
  c.options.tcp_streams = streams;
  return c;
}

TEST(StripeCut, PartsCoverTheMessageAndSmallMessagesStayWhole) {
  for (size_t streams = 1; streams <= 4; ++streams) {
    for (size_t bytes : {size_t{0}, size_t{1}, kMinStripePartBytes - 1, 2 * kMinStripePartBytes - 1,
                         2 * kMinStripePartBytes, 100001 * size_t{3}, size_t{1} << 20}) {
      const size_t parts = stripe_parts(bytes, streams);
      ASSERT_GE(parts, 1u);
      ASSERT_LE(parts, streams);
      if (bytes < 2 * kMinStripePartBytes) {
        EXPECT_EQ(parts, 1u) << bytes;
      }
      const size_t part = stripe_part_bytes(bytes, parts);
      EXPECT_GE(part * parts, bytes);
      // Every part but the last is full and the last is not empty.
      if (parts > 1) {
        EXPECT_GT(bytes, part * (parts - 1)) << bytes << " over " << parts;
        EXPECT_GE(part, kMinStripePartBytes);
      }
    }
  }
}

class StripedChannelTest : public ::testing::TestWithParam<int> {
 protected:
  bootstrap::MemoryStore store_;
};

TEST_P(StripedChannelTest, EverySizeArrivesWholeBetweenThreeRanks) {
  const int streams = GetParam();
  const std::vector<size_t> sizes = {
      0, 1, 4099, kMinStripePartBytes * 2 - 1, 32768, 32769, 65537, 100003 * 3, 262144, 1000003};
  constexpr int kRanks = 3;
  std::string job = test_support::unique_job_id("stripe");
  test_support::run_ranks_or_throw(kRanks, [&](int rank) {
    auto t = connect_mesh(striped_config(rank, kRanks, job, streams), store_,
                          Deadline::after_seconds(30));
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      const std::string what = t->channel(peer).describe();
      if (streams > 1) {
        EXPECT_NE(what.find(fmt::format("over {} streams", streams)), std::string::npos) << what;
      }
      EXPECT_NE(what.find(fmt::format("rank {}", peer)), std::string::npos) << what;
    }
    // Every rank sends every size to every peer, half of them under one shared tag (per-tag
    // order) and half under their own; receives are posted in reverse order of the sends.
    std::vector<std::vector<std::byte>> out, in;
    std::vector<Request> requests;
    auto tag_of = [](size_t k) { return k % 2 == 0 ? make_tag(7, 1) : make_tag(8, k); };
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      for (size_t k = 0; k < sizes.size(); ++k) {
        out.push_back(test_support::pattern(rank, peer, sizes[k], static_cast<int>(k)));
        requests.push_back(t->channel(peer).isend(tag_of(k), out.back()));
      }
    }
    for (int peer = kRanks - 1; peer >= 0; --peer) {
      if (peer == rank) continue;
      // Same-tag messages must be received in send order: post those forwards, the rest backwards.
      for (size_t k = 0; k < sizes.size(); ++k) {
        if (k % 2 == 0) {
          in.emplace_back(sizes[k]);
          requests.push_back(t->channel(peer).irecv(tag_of(k), in.back()));
        }
      }
      for (size_t k = sizes.size(); k-- > 0;) {
        if (k % 2 == 1) {
          in.emplace_back(sizes[k]);
          requests.push_back(t->channel(peer).irecv(tag_of(k), in.back()));
        }
      }
    }
    t->wait(requests, Deadline::after_seconds(60), "striped exchange");
    size_t i = 0;
    for (int peer = kRanks - 1; peer >= 0; --peer) {
      if (peer == rank) continue;
      for (size_t k = 0; k < sizes.size(); ++k)
        if (k % 2 == 0) {
          EXPECT_EQ(in[i], test_support::pattern(peer, rank, sizes[k], static_cast<int>(k)))
              << "size " << sizes[k] << " from rank " << peer;
          ++i;
        }
      for (size_t k = sizes.size(); k-- > 0;)
        if (k % 2 == 1) {
          EXPECT_EQ(in[i], test_support::pattern(peer, rank, sizes[k], static_cast<int>(k)))
              << "size " << sizes[k] << " from rank " << peer;
          ++i;
        }
    }
  });
}

TEST_P(StripedChannelTest, SizeMismatchIsReportedNotHung) {
  std::string job = test_support::unique_job_id("stripe-mm");
  auto errors = test_support::run_ranks(2, [&](int rank) {
    auto t =
        connect_mesh(striped_config(rank, 2, job, GetParam()), store_, Deadline::after_seconds(30));
    std::vector<std::byte> buf(rank == 0 ? 300000 : 200000);
    Request r = rank == 0 ? t->channel(1).isend(make_tag(3, 3), buf)
                          : t->channel(0).irecv(make_tag(3, 3), buf);
    t->wait(std::span(&r, 1), Deadline::after_seconds(10), "mismatched message");
  });
  ASSERT_TRUE(errors[1]) << "rank 1 received a message of the wrong size without an error";
  EXPECT_EQ(test_support::error_mismatch(errors[1], ErrorCode::kMismatch, "rank 0"), "");
}

TEST_P(StripedChannelTest, PeerGoneMidMessageFailsTheWaiterNamingIt) {
  std::string job = test_support::unique_job_id("stripe-gone");
  auto errors = test_support::run_ranks(2, [&](int rank) {
    auto t =
        connect_mesh(striped_config(rank, 2, job, GetParam()), store_, Deadline::after_seconds(30));
    std::vector<std::byte> buf(4 << 20);
    if (rank == 1) {
      // Send a part of what rank 0 waits for, then vanish: the transport closes every stream.
      Request r = t->channel(0).isend(make_tag(5, 1), std::span(buf).first(1 << 20));
      t->wait(std::span(&r, 1), Deadline::after_seconds(30), "first half");
      return;
    }
    Request a = t->channel(1).irecv(make_tag(5, 1), std::span(buf).first(1 << 20));
    Request b = t->channel(1).irecv(make_tag(5, 2), std::span(buf).subspan(1 << 20));
    std::vector<Request> both = {a, b};
    t->wait(both, Deadline::after_seconds(30), "the rest");
  });
  EXPECT_FALSE(errors[1]);
  ASSERT_TRUE(errors[0]) << "rank 0 did not notice its peer leave";
  EXPECT_EQ(test_support::error_mismatch(errors[0], ErrorCode::kPeerFailure, "rank 1"), "");
}

TEST_P(StripedChannelTest, AbortNoticeReachesThePeer) {
  std::string job = test_support::unique_job_id("stripe-abort");
  auto errors = test_support::run_ranks(2, [&](int rank) {
    auto t =
        connect_mesh(striped_config(rank, 2, job, GetParam()), store_, Deadline::after_seconds(30));
    if (rank == 1) {
      t->abort_all("rank 1 ran out of memory");
      return;
    }
    std::vector<std::byte> buf(1 << 20);
    Request r = t->channel(1).irecv(make_tag(9, 1), buf);
    t->wait(std::span(&r, 1), Deadline::after_seconds(30), "a message that never comes");
  });
  ASSERT_TRUE(errors[0]);
  EXPECT_EQ(
      test_support::error_mismatch(errors[0], ErrorCode::kPeerFailure, "rank 1 ran out of memory"),
      "");
}

TEST(TcpStreamsConfig, OutOfRangeIsAConfigErrorNamingTheVariable) {
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("stripe-bad");
  try {
    connect_mesh(striped_config(0, 2, job, 0), store, Deadline::after_seconds(5));
    ADD_FAILURE() << "0 streams per pair were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig) << e.what();
    EXPECT_NE(std::string(e.what()).find("TUTTI_TCP_STREAMS"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Streams, StripedChannelTest, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return "k" + std::to_string(info.param); });

}  // namespace
}  // namespace tutti::transport
