#include "net/socket.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "unit/net/support/test_util.hpp"

namespace tutti::net {
namespace {

using namespace std::chrono_literals;
using testing::free_port;

struct Pair {
  Fd listener, client, server;
};

Pair connected_pair(const std::string& host = "127.0.0.1") {
  Pair p;
  uint16_t port = 0;
  p.listener = listen_tcp(host, 0, &port);
  p.client = connect_tcp(Endpoint{host, port}, Deadline::after(10s));
  p.server = accept_tcp(p.listener.get(), Deadline::after(10s));
  return p;
}

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  return v;
}

TEST(Socket, ConnectRetriesUntilTheListenerAppears) {
  uint16_t port = free_port();
  auto connected = std::async(std::launch::async, [port] {
    return connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(20s));
  });
  // Give the connector time to be refused at least once; the test holds either way.
  std::this_thread::sleep_for(50ms);
  uint16_t bound = 0;
  Fd listener = listen_tcp("127.0.0.1", port, &bound);
  ASSERT_EQ(bound, port);
  Fd accepted = accept_tcp(listener.get(), Deadline::after(20s));
  ASSERT_TRUE(accepted.valid());
  Fd client = connected.get();
  ASSERT_TRUE(client.valid());

  auto data = pattern(100);
  write_all(client.get(), data, Deadline::after(10s), "server");
  std::vector<std::byte> got(100);
  read_exact(accepted.get(), got, Deadline::after(10s), "client");
  EXPECT_EQ(got, data);
}

TEST(Socket, ConnectTimesOutNamingTheEndpoint) {
  uint16_t port = free_port();
  try {
    connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(200ms));
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
}

TEST(Socket, ConnectToAnUnresolvableNameTimesOut) {
  try {
    connect_tcp(Endpoint{"no-such-host.invalid", 1234}, Deadline::after(200ms));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kConfig) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-host.invalid:1234"), std::string::npos);
  }
}

class SocketTransfer : public ::testing::TestWithParam<size_t> {};

TEST_P(SocketTransfer, MovesExactBytesBothWays) {
  Pair p = connected_pair();
  auto data = pattern(GetParam());
  auto writer = std::async(
      std::launch::async, [&] { write_all(p.client.get(), data, Deadline::after(30s), "server"); });
  std::vector<std::byte> got(data.size());
  read_exact(p.server.get(), got, Deadline::after(30s), "client");
  writer.get();
  EXPECT_EQ(got, data);
}

INSTANTIATE_TEST_SUITE_P(Sizes, SocketTransfer, ::testing::Values(0, 1, 7, 4096, 65537, 8u << 20));

TEST(Socket, ReadReportsPeerCloseNamingThePeer) {
  Pair p = connected_pair();
  std::vector<std::byte> one = pattern(3);
  write_all(p.client.get(), one, Deadline::after(10s), "server");
  p.client.reset();
  std::vector<std::byte> got(10);
  try {
    read_exact(p.server.get(), got, Deadline::after(10s), "rank 3 at 10.0.0.3:1234");
    FAIL() << "expected a peer failure";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerFailure);
    std::string m = e.what();
    EXPECT_NE(m.find("connection to rank 3 at 10.0.0.3:1234 closed"), std::string::npos) << m;
    EXPECT_NE(m.find("3 of 10"), std::string::npos) << m;
  }
}

TEST(Socket, WriteToAClosedPeerThrowsInsteadOfRaisingSigpipe) {
  Pair p = connected_pair();
  p.server.reset();
  auto data = pattern(1 << 20);
  try {
    // The first writes may land in kernel buffers; keep writing until the reset arrives.
    for (int i = 0; i < 1000; ++i) write_all(p.client.get(), data, Deadline::after(10s), "peer 1");
    FAIL() << "expected a peer failure";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerFailure) << e.what();
    EXPECT_NE(std::string(e.what()).find("connection to peer 1 closed"), std::string::npos);
  }
}

TEST(Socket, ReadHonoursTheDeadline) {
  Pair p = connected_pair();
  std::vector<std::byte> got(4);
  auto start = std::chrono::steady_clock::now();
  try {
    read_exact(p.server.get(), got, Deadline::after(100ms), "silent peer");
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("silent peer"), std::string::npos);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
}

TEST(Socket, WriteHonoursTheDeadlineWhenThePeerDoesNotRead) {
  Pair p = connected_pair();
  auto data = pattern(64u << 20);
  try {
    write_all(p.client.get(), data, Deadline::after(200ms), "lazy peer");
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("lazy peer"), std::string::npos);
  }
}

TEST(Socket, AcceptReturnsInvalidFdAtTheDeadline) {
  uint16_t port = 0;
  Fd listener = listen_tcp("127.0.0.1", 0, &port);
  EXPECT_NE(port, 0);
  Fd fd = accept_tcp(listener.get(), Deadline::after(50ms));
  EXPECT_FALSE(fd.valid());
}

TEST(Socket, AcceptReportsThePeerAddressAndLocalAddressIsNumeric) {
  uint16_t port = 0;
  Fd listener = listen_tcp("", 0, &port);
  Fd client = connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(10s));
  std::string peer;
  Fd server = accept_tcp(listener.get(), Deadline::after(10s), &peer);
  ASSERT_TRUE(server.valid());
  EXPECT_TRUE(peer.starts_with("127.0.0.1:")) << peer;
  EXPECT_EQ(local_address(client.get()), "127.0.0.1");
}

TEST(Socket, WorksOverIPv6) {
  uint16_t port = 0;
  Fd listener;
  try {
    listener = listen_tcp("::1", 0, &port);
  } catch (const Error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  Fd client =
      connect_tcp(parse_endpoint("[::1]:" + std::to_string(port), "test"), Deadline::after(10s));
  Fd server = accept_tcp(listener.get(), Deadline::after(10s));
  ASSERT_TRUE(server.valid());
  EXPECT_EQ(local_address(client.get()), "::1");
  auto data = pattern(1000);
  write_all(client.get(), data, Deadline::after(10s), "v6 server");
  std::vector<std::byte> got(1000);
  read_exact(server.get(), got, Deadline::after(10s), "v6 client");
  EXPECT_EQ(got, data);
}

TEST(Socket, ListeningTwiceOnOnePortNamesThePort) {
  uint16_t port = 0;
  Fd first = listen_tcp("127.0.0.1", 0, &port);
  try {
    listen_tcp("127.0.0.1", port, nullptr);
    FAIL() << "expected EADDRINUSE";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kSystem);
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
}

TEST(Socket, FdClosesOnDestructionAndMoves) {
  int raw = -1;
  {
    uint16_t port = 0;
    Fd a = listen_tcp("127.0.0.1", 0, &port);
    raw = a.get();
    Fd b = std::move(a);
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
    Fd c;
    c = std::move(b);
    EXPECT_EQ(c.get(), raw);
  }
  int type = 0;
  socklen_t len = sizeof(type);
  EXPECT_NE(::getsockopt(raw, SOL_SOCKET, SO_TYPE, &type, &len), 0);
}

struct EndpointCase {
  std::string text;
  std::string host;
  uint16_t port;
  std::string round_trip;
};

class ParseEndpointGood : public ::testing::TestWithParam<EndpointCase> {};

TEST_P(ParseEndpointGood, Parses) {
  const auto& c = GetParam();
  Endpoint e = parse_endpoint(c.text, "TUTTI_STORE");
  EXPECT_EQ(e.host, c.host);
  EXPECT_EQ(e.port, c.port);
  EXPECT_EQ(e.to_string(), c.round_trip);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseEndpointGood,
    ::testing::Values(EndpointCase{"localhost:29500", "localhost", 29500, "localhost:29500"},
                      EndpointCase{"10.1.2.3:1", "10.1.2.3", 1, "10.1.2.3:1"},
                      EndpointCase{"[::1]:80", "::1", 80, "[::1]:80"},
                      EndpointCase{"[fe80::1%eth0]:65535", "fe80::1%eth0", 65535,
                                   "[fe80::1%eth0]:65535"},
                      EndpointCase{"job-worker-0.job.ns.svc:0", "job-worker-0.job.ns.svc", 0,
                                   "job-worker-0.job.ns.svc:0"}));

class ParseEndpointBad : public ::testing::TestWithParam<std::string> {};

TEST_P(ParseEndpointBad, IsAConfigErrorNamingTheVariable) {
  try {
    parse_endpoint(GetParam(), "TUTTI_STORE");
    FAIL() << "accepted '" << GetParam() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("TUTTI_STORE"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ParseEndpointBad,
                         ::testing::Values("", "host", "host:", ":80", "::1:80", "[::1]80", "[::1",
                                           "h:70000", "h:abc", "h:-1", "h:80x"));

TEST(Socket, BareHostDropsOnlyEnclosingBrackets) {
  EXPECT_EQ(bare_host("[::1]"), "::1");
  EXPECT_EQ(bare_host("[fd00::2]"), "fd00::2");
  EXPECT_EQ(bare_host("::1"), "::1");
  EXPECT_EQ(bare_host("10.0.0.2"), "10.0.0.2");
  EXPECT_EQ(bare_host("[]"), "[]");
  EXPECT_EQ(bare_host("[::1"), "[::1");
  EXPECT_EQ(bare_host(""), "");
}

}  // namespace
}  // namespace tutti::net
