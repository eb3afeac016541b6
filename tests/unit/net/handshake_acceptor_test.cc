// HandshakeAcceptor over real loopback sockets: strangers that stay silent, send garbage or flood
// the port never stand between the acceptor and a real client.
#include "net/handshake_acceptor.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "net/socket.hpp"
#include "unit/net/support/test_util.hpp"

namespace tutti::net {
namespace {

using namespace std::chrono_literals;

struct Port {
  Fd listener;
  uint16_t port = 0;
  Port() { listener = listen_tcp("127.0.0.1", 0, &port); }
  Fd connect() const { return connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(10s)); }
};

HandshakePolicy policy(std::vector<ConnectionKind> kinds = {ConnectionKind::kData}) {
  return HandshakePolicy{.expected_token = "tok",
                         .kinds = std::move(kinds),
                         .trailer_bytes = 0,
                         .per_connection = 30s,
                         .max_pending = 16,
                         .label = "test port"};
}

// What a stranger is told: the refusal byte, or nothing (closed) when it was simply dropped.
std::optional<std::byte> verdict_of(const Fd& fd) {
  std::array<std::byte, 1> v{};
  try {
    read_exact(fd.get(), v, Deadline::after(20s), "test port");
    return v[0];
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kPeerFailure) return std::nullopt;
    throw;
  }
}

void send_text(const Fd& fd, const std::string& text) {
  write_all(fd.get(), std::as_bytes(std::span(text.data(), text.size())), Deadline::after(10s),
            "test port");
}

// A real client: connects, says Hello, returns whether it was accepted.
std::future<void> real_client(const Port& port, int rank, std::string token = "tok",
                              ConnectionKind kind = ConnectionKind::kData) {
  return std::async(std::launch::async, [&port, rank, token, kind] {
    Fd fd = port.connect();
    client_handshake(fd.get(), Hello{kind, rank, token}, Deadline::after(20s), "test port");
  });
}

TEST(HandshakeAcceptor, SilentConnectionsDoNotHoldUpARealClient) {
  Port port;
  HandshakeAcceptor acceptor(port.listener.get(), policy());
  std::vector<Fd> silent;
  for (int i = 0; i < 6; ++i) silent.push_back(port.connect());  // queued before the real one
  auto client = real_client(port, 7);
  std::optional<AcceptedConnection> c = acceptor.next(Deadline::after(20s));
  ASSERT_TRUE(c);
  client.get();
  EXPECT_EQ(c->hello.rank, 7);
  // The silent ones were accepted first and are still waiting: nobody waited for them to expire.
  EXPECT_EQ(acceptor.pending(), 6u);
  EXPECT_EQ(acceptor.refused(), 0u);
}

TEST(HandshakeAcceptor, GarbageIsRefusedWhileARealClientGetsThrough) {
  Port port;
  HandshakeAcceptor acceptor(port.listener.get(), policy());
  Fd http = port.connect();
  send_text(http, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  Fd half = port.connect();
  send_text(half, "TUTT");  // a prefix of a Hello, then silence
  auto client = real_client(port, 3);
  auto accepted =
      std::async(std::launch::async, [&] { return acceptor.next(Deadline::after(20s)); });
  EXPECT_EQ(verdict_of(http), kHelloRefused);
  std::optional<AcceptedConnection> c = accepted.get();
  client.get();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->hello.rank, 3);
  EXPECT_GE(acceptor.refused(), 1u);
}

// Runs the acceptor on a thread until destroyed, keeping what it accepts.
class Serving {
 public:
  explicit Serving(HandshakeAcceptor& acceptor)
      : thread_([this, &acceptor] {
          while (!stop_) {
            auto c = acceptor.next(Deadline::after(20ms));
            std::lock_guard lock(mutex_);
            if (c) ranks_.push_back(c->hello.rank);
          }
        }) {}
  ~Serving() {
    stop_ = true;
    thread_.join();
  }
  std::vector<int> ranks() {
    std::lock_guard lock(mutex_);
    return ranks_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<int> ranks_;
  std::thread thread_;
};

TEST(HandshakeAcceptor, WrongTokenAndWrongKindAreRefusedInTheHandshake) {
  Port port;
  HandshakeAcceptor acceptor(port.listener.get(), policy({ConnectionKind::kData}));
  std::vector<int> accepted;
  {
    Serving serving(acceptor);
    auto wrong_token = real_client(port, 1, "nope");
    auto wrong_kind = real_client(port, 2, "tok", ConnectionKind::kStore);
    auto right = real_client(port, 3);
    for (auto* refused : {&wrong_token, &wrong_kind}) {
      try {
        refused->get();
        ADD_FAILURE() << "a client that should be refused was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kAuth) << e.what();
      }
    }
    right.get();
    // The verdict reaches the client just before next() hands the connection to the server.
    EXPECT_TRUE(testing::eventually([&] { return !serving.ranks().empty(); }));
    accepted = serving.ranks();
  }
  EXPECT_EQ(accepted, std::vector<int>{3});
  EXPECT_EQ(acceptor.refused(), 2u);
}

TEST(HandshakeAcceptor, SilentConnectionIsDroppedAtItsDeadline) {
  Port port;
  HandshakePolicy p = policy();
  p.per_connection = 200ms;
  HandshakeAcceptor acceptor(port.listener.get(), p);
  Fd silent = port.connect();
  std::atomic<bool> stop{false};
  std::thread server([&] {
    while (!stop) (void)acceptor.next(Deadline::after(20ms));
  });
  // The acceptor tells it it was refused, then closes; the wait's deadline is only a backstop.
  EXPECT_EQ(verdict_of(silent), kHelloRefused);
  stop = true;
  server.join();
  EXPECT_EQ(acceptor.refused(), 1u);
  EXPECT_EQ(acceptor.pending(), 0u);
}

TEST(HandshakeAcceptor, BeyondMaxPendingTheOldestIsDropped) {
  Port port;
  HandshakePolicy p = policy();
  p.max_pending = 2;
  HandshakeAcceptor acceptor(port.listener.get(), p);
  Fd oldest = port.connect();
  Fd second = port.connect();
  Fd third = port.connect();
  // All three wait in the backlog and are accepted in connect order.
  EXPECT_FALSE(acceptor.next(Deadline::after(1s)));
  EXPECT_EQ(verdict_of(oldest), kHelloRefused);
  EXPECT_EQ(acceptor.pending(), 2u);
  EXPECT_EQ(acceptor.refused(), 1u);
  // A real client still gets through the full house.
  auto client = real_client(port, 5);
  std::optional<AcceptedConnection> c = acceptor.next(Deadline::after(20s));
  ASSERT_TRUE(c);
  client.get();
  EXPECT_EQ(c->hello.rank, 5);
}

TEST(HandshakeAcceptor, ReadsTheTrailerAfterTheVerdict) {
  Port port;
  HandshakePolicy p = policy();
  p.trailer_bytes = 8;
  HandshakeAcceptor acceptor(port.listener.get(), p);
  auto client = std::async(std::launch::async, [&] {
    Fd fd = port.connect();
    client_handshake(fd.get(), Hello{ConnectionKind::kData, 9, "tok"}, Deadline::after(20s), "p");
    send_text(fd, "12345678");
    return fd;  // kept open until the acceptor has read the trailer
  });
  std::optional<AcceptedConnection> c = acceptor.next(Deadline::after(20s));
  ASSERT_TRUE(c);
  Fd kept = client.get();
  EXPECT_EQ(c->hello.rank, 9);
  ASSERT_EQ(c->trailer.size(), 8u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(c->trailer.data()), 8), "12345678");
}

TEST(HandshakeAcceptor, ReturnsNothingAtTheDeadlineOrWhenWoken) {
  Port port;
  HandshakeAcceptor acceptor(port.listener.get(), policy());
  EXPECT_FALSE(acceptor.next(Deadline::after(50ms)));
  std::array<int, 2> pipe_fds{};
  ASSERT_EQ(::pipe(pipe_fds.data()), 0);
  Fd wake_read(pipe_fds[0]), wake_write(pipe_fds[1]);
  ASSERT_EQ(::write(wake_write.get(), "x", 1), 1);
  EXPECT_FALSE(acceptor.next(Deadline::after(20s), wake_read.get()));
}

}  // namespace
}  // namespace tutti::net
