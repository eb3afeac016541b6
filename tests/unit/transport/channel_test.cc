// Tag matching, size mismatches, abort notices, clean closes and wait deadlines between two ranks
// (threads), over TCP and over shared memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <numeric>
#include <span>
#include <type_traits>

#include "bootstrap/memory_store.hpp"
#include "core/error.hpp"
#include "unit/transport/support/mesh_harness.hpp"

namespace tutti::transport {
namespace {

using test_support::Layout;

class ChannelTest : public ::testing::TestWithParam<Layout> {
 protected:
  // Runs fn(rank, transport) on two ranks connected with this test's layout.
  void run_pair(const std::function<void(int, Transport&)>& fn) {
    std::string job = test_support::unique_job_id("chan");
    test_support::run_ranks_or_throw(2, [&](int rank) {
      auto t = connect_mesh(test_support::mesh_config(rank, 2, GetParam(), job), store_,
                            Deadline::after_seconds(30));
      fn(rank, *t);
    });
  }
  Deadline soon() { return Deadline::after_seconds(30); }
  bootstrap::MemoryStore store_;
};

// Expects `body` to throw a tutti::Error with `code` whose message holds every one of `parts`.
template <typename Body>
void expect_error(Body body, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << part << "' missing in: " << e.what();
  }
}

TEST_P(ChannelTest, ManyTagsMatchOutOfOrderAndSameTagsInFifoOrder) {
  constexpr int kMessages = 300;
  auto size_of = [](int k) { return static_cast<size_t>((k * 7919) % 20000); };
  // Every third message reuses tag 99 so that one tag has many messages queued in order.
  auto tag_of = [](int k) { return k % 3 == 0 ? make_tag(99, 1) : make_tag(k, k % 5); };
  run_pair([&](int rank, Transport& t) {
    Channel& c = t.channel(1 - rank);
    if (rank == 0) {
      std::vector<std::vector<std::byte>> out;
      for (int k = 0; k < kMessages; ++k) out.push_back(test_support::pattern(0, 1, size_of(k), k));
      std::vector<Request> sends;
      for (int k = 0; k < kMessages; ++k) sends.push_back(c.isend(tag_of(k), out[k]));
      t.wait(sends, soon(), "sends");
      return;
    }
    // Post half the receives in a scrambled order up front; the rest arrive unexpected.
    std::vector<int> order(kMessages);
    std::iota(order.begin(), order.end(), 0);
    std::reverse(order.begin(), order.end());
    std::stable_partition(order.begin(), order.end(), [](int k) { return k % 2 == 0; });
    std::vector<std::vector<std::byte>> in(kMessages);
    std::vector<Request> receives(kMessages);
    // Same-tag receives must be posted in send order: that order is what they match.
    std::vector<int> same_tag;
    for (int k = 0; k < kMessages; ++k)
      if (k % 3 == 0) same_tag.push_back(k);
    size_t next_same = 0;
    auto post = [&](int k) {
      if (k % 3 == 0) k = same_tag[next_same++];
      in[k].resize(size_of(k));
      receives[k] = c.irecv(tag_of(k), in[k]);
    };
    for (int i = 0; i < kMessages / 2; ++i) post(order[i]);
    c.progress();  // whatever has arrived so far lands in the posted buffers or the stash
    for (int i = kMessages / 2; i < kMessages; ++i) post(order[i]);
    t.wait(receives, soon(), "receives");
    for (int k = 0; k < kMessages; ++k)
      EXPECT_EQ(in[k], test_support::pattern(0, 1, size_of(k), k)) << "message " << k;
  });
}

TEST_P(ChannelTest, ZeroByteMessagesMatchLikeAnyOther) {
  run_pair([&](int rank, Transport& t) {
    Channel& c = t.channel(1 - rank);
    std::vector<Request> r;
    for (uint32_t step = 0; step < 10; ++step) {
      r.push_back(c.isend(make_tag(5, step), {}));
      r.push_back(c.irecv(make_tag(5, 9 - step), {}));
    }
    t.wait(r, soon(), "zero-byte exchange");
    for (const auto& req : r) EXPECT_TRUE(req.complete());
    EXPECT_FALSE(c.busy());
  });
}

TEST_P(ChannelTest, SizeMismatchOnPostedReceiveNamesBothSizes) {
  std::barrier posted(2);
  run_pair([&](int rank, Transport& t) {
    Channel& c = t.channel(1 - rank);
    std::vector<std::byte> buf(16);
    if (rank == 0) {
      posted.arrive_and_wait();
      Request s = c.isend(make_tag(7, 2), std::span(buf).first(8));
      t.wait(std::span(&s, 1), soon(), "send");
      posted.arrive_and_wait();  // keep the connection until rank 1 has seen the frame
      return;
    }
    Request r = c.irecv(make_tag(7, 2), buf);
    posted.arrive_and_wait();
    std::vector<std::string> parts = {"rank 0 sent 8 bytes for collective #7 step 2",
                                      "expected 16 bytes", "different counts/dtypes"};
    expect_error([&] { t.wait(std::span(&r, 1), soon(), "recv"); }, ErrorCode::kMismatch, parts);
    // The channel stays failed with the same error.
    expect_error([&] { c.progress(); }, ErrorCode::kMismatch, parts);
    expect_error([&] { c.isend(make_tag(8, 0), {}); }, ErrorCode::kMismatch, parts);
    posted.arrive_and_wait();
  });
}

TEST_P(ChannelTest, SizeMismatchOnStashedMessage) {
  std::barrier done(2);
  run_pair([&](int rank, Transport& t) {
    Channel& c = t.channel(1 - rank);
    std::vector<std::byte> buf(32);
    if (rank == 0) {
      std::vector<Request> s = {c.isend(make_tag(3, 1), std::span(buf).first(24)),
                                c.isend(make_tag(4, 0), {})};
      t.wait(s, soon(), "sends");
      done.arrive_and_wait();
      return;
    }
    // The marker comes after the bad message, so by then the bad one sits in the stash.
    Request marker = c.irecv(make_tag(4, 0), {});
    t.wait(std::span(&marker, 1), soon(), "marker");
    expect_error([&] { c.irecv(make_tag(3, 1), buf); }, ErrorCode::kMismatch,
                 {"rank 0 sent 24 bytes for collective #3 step 1", "expected 32 bytes"});
    done.arrive_and_wait();
  });
}

TEST_P(ChannelTest, AbortNoticeFailsThePeerWithTheReason) {
  std::barrier aborted(2);
  run_pair([&](int rank, Transport& t) {
    if (rank == 0) {
      t.abort_all("CUDA out of memory on device 3");
      aborted.arrive_and_wait();
      aborted.arrive_and_wait();
      return;
    }
    std::vector<std::byte> buf(4);
    Request r = t.channel(0).irecv(make_tag(1, 0), buf);
    aborted.arrive_and_wait();
    std::vector<std::string> parts = {"rank 0 aborted: CUDA out of memory on device 3"};
    expect_error([&] { t.wait(std::span(&r, 1), soon(), "recv"); }, ErrorCode::kPeerFailure, parts);
    expect_error([&] { t.channel(0).irecv(make_tag(2, 0), buf); }, ErrorCode::kPeerFailure, parts);
    aborted.arrive_and_wait();
  });
}

TEST_P(ChannelTest, WaitDeadlineNamesWhatAndThePendingPeer) {
  std::barrier done(2);
  run_pair([&](int rank, Transport& t) {
    if (rank == 1) {
      std::vector<std::byte> buf(4);
      Request r = t.channel(0).irecv(make_tag(1, 0), buf);
      expect_error([&] { t.wait(std::span(&r, 1), Deadline::after_seconds(0.3), "allreduce #1"); },
                   ErrorCode::kTimeout,
                   {"allreduce #1", "rank 0 on host", "TUTTI_COLLECTIVE_TIMEOUT"});
    }
    done.arrive_and_wait();
  });
}

TEST_P(ChannelTest, UserTagsMayNotUseTheControlRange) {
  run_pair([&](int rank, Transport& t) {
    std::vector<std::byte> buf(1);
    EXPECT_THROW(t.channel(1 - rank).isend(control_tag(ControlKind::kAbort, 0), buf), Error);
    EXPECT_THROW(t.channel(1 - rank).irecv(control_tag(ControlKind::kCallAnnouncement, 0), buf),
                 Error);
    // Nor may a caller pick another communicator's context.
    EXPECT_THROW(t.channel(1 - rank).isend(with_context(make_tag(1, 1), 7), buf), Error);
  });
}

// Gathered sends and scattered receives (Channel::isend_pieces, irecv_pieces) match plain ones of
// the same bytes either way round: more pieces than one write or read takes, empty pieces, a
// message of no bytes, and a scattered receive posted after its message arrived (the stash).
TEST_P(ChannelTest, PiecesMatchPlainMessagesEitherWayRound) {
  // Sizes of the pieces of one message: 100 of them (over the 64 one write gathers), some empty.
  std::vector<size_t> sizes;
  for (int k = 0; k < 100; ++k)
    sizes.push_back(k % 9 == 0 ? 0 : static_cast<size_t>(k * 37 % 5000));
  size_t total = 0;
  for (size_t n : sizes) total += n;
  const auto big = test_support::pattern(0, 1, total, 1);
  const auto small = test_support::pattern(0, 1, 3000, 2);
  const auto flat = test_support::pattern(0, 1, 50000, 3);
  // Splits `bytes` (held by the caller) into pieces of `sizes`.
  auto split = [](auto& bytes, const std::vector<size_t>& piece_sizes) {
    using Span = std::span<std::remove_reference_t<decltype(*bytes.data())>>;
    std::vector<Span> out;
    size_t at = 0;
    for (size_t n : piece_sizes) {
      out.push_back(Span(bytes.data() + at, n));
      at += n;
    }
    return out;
  };
  run_pair([&](int rank, Transport& t) {
    Channel& c = t.channel(1 - rank);
    EXPECT_TRUE(c.takes_pieces());
    if (rank == 0) {
      std::vector<Request> sends;
      sends.push_back(c.isend_pieces(make_tag(1, 0), split(big, sizes)));
      sends.push_back(c.isend_pieces(make_tag(2, 0), split(small, {1000, 0, 2000})));
      sends.push_back(c.isend(make_tag(3, 0), flat));
      sends.push_back(c.isend_pieces(make_tag(4, 0), std::vector<std::span<const std::byte>>{}));
      t.wait(sends, soon(), "sends");
      return;
    }
    std::vector<std::byte> got_big(total), got_small(small.size()), got_flat(flat.size());
    Request r1 = c.irecv(make_tag(1, 0), got_big);
    // 40 pieces of 1250 bytes: more than one read fills.
    Request r3 = c.irecv_pieces(make_tag(3, 0), split(got_flat, std::vector<size_t>(40, 1250)));
    std::vector<Request> first{r1, r3};
    t.wait(first, soon(), "first receives");
    // Message 2 arrived before message 3 was read, so it waits in the stash now.
    Request r2 = c.irecv_pieces(make_tag(2, 0), split(got_small, {10, 0, 2989, 1}));
    Request r4 = c.irecv_pieces(make_tag(4, 0), std::vector<std::span<std::byte>>{});
    std::vector<Request> rest{r2, r4};
    t.wait(rest, soon(), "later receives");
    EXPECT_EQ(got_big, big);
    EXPECT_EQ(got_small, small);
    EXPECT_EQ(got_flat, flat);
  });
}

INSTANTIATE_TEST_SUITE_P(Kinds, ChannelTest, ::testing::Values(Layout::kTcp, Layout::kShm),
                         [](const auto& info) {
                           return std::string(test_support::to_string(info.param));
                         });

// A peer that sent its last message and closed is no failure until something needs it.
TEST(TcpChannel, MessagesSentBeforeACleanCloseAreStillReceived) {
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("close");
  std::barrier closed(2);
  test_support::run_ranks_or_throw(2, [&](int rank) {
    auto t = connect_mesh(test_support::mesh_config(rank, 2, Layout::kTcp, job), store,
                          Deadline::after_seconds(30));
    auto message = test_support::pattern(0, 1, 1000);
    if (rank == 0) {
      Request s = t->channel(1).isend(make_tag(1, 0), message);
      t->wait(std::span(&s, 1), Deadline::after_seconds(30), "send");
      t.reset();
      closed.arrive_and_wait();
      return;
    }
    closed.arrive_and_wait();
    std::vector<std::byte> in(1000);
    Request r = t->channel(0).irecv(make_tag(1, 0), in);
    t->wait(std::span(&r, 1), Deadline::after_seconds(30), "recv");
    EXPECT_EQ(in, message);
    // A receive that needs the peer fails (at once or in wait, depending on when EOF is read).
    expect_error(
        [&] {
          Request more = t->channel(0).irecv(make_tag(2, 0), in);
          t->wait(std::span(&more, 1), Deadline::after_seconds(30), "recv");
        },
        ErrorCode::kPeerFailure, {"lost connection to rank 0 on host host-0 (tcp "});
  });
}

}  // namespace
}  // namespace tutti::transport
