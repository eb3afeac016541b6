#include "net/handshake.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <array>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "net/socket.hpp"
#include "net/wire.hpp"

namespace tutti::net {
namespace {

using namespace std::chrono_literals;

struct Pipe {
  Fd client, server;
};

Pipe socket_pair() {
  std::array<int, 2> fds{};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds.data()) != 0)
    throw std::runtime_error("socketpair failed");
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

// Runs a server handshake on one end while `client` talks on the other; returns the server's error
// (or nullopt on success) so tests can check both sides.
struct Outcome {
  std::optional<Error> server_error;
  std::optional<Hello> hello;
};

template <typename ClientFn>
Outcome run(const std::string& expected_token, ClientFn client) {
  Pipe p = socket_pair();
  auto server = std::async(std::launch::async, [&] {
    Outcome o;
    try {
      o.hello = server_handshake(p.server.get(), expected_token, Deadline::after(10s), "test peer");
    } catch (const Error& e) {
      o.server_error = e;
    }
    return o;
  });
  client(p.client.get());
  return server.get();
}

std::string raw_hello(uint32_t magic, uint16_t version, uint16_t kind, int32_t rank,
                      uint32_t token_len, const std::string& token) {
  wire::Writer w;
  w.u32(magic);
  w.u16(version);
  w.u16(kind);
  w.i32(rank);
  w.u32(token_len);
  w.raw(token);
  return std::string(reinterpret_cast<const char*>(w.view().data()), w.view().size());
}

void send_raw(int fd, const std::string& bytes) {
  write_all(fd, std::as_bytes(std::span(bytes.data(), bytes.size())), Deadline::after(10s), "srv");
}

std::byte read_verdict(int fd) {
  std::array<std::byte, 1> v{};
  read_exact(fd, v, Deadline::after(10s), "srv");
  return v[0];
}

class HandshakeKinds : public ::testing::TestWithParam<ConnectionKind> {};

TEST_P(HandshakeKinds, AcceptsTheRightToken) {
  Outcome o = run("s3cret", [](int fd) {
    client_handshake(fd, Hello{GetParam(), 5, "s3cret"}, Deadline::after(10s), "server");
  });
  ASSERT_FALSE(o.server_error) << o.server_error->what();
  EXPECT_EQ(o.hello->kind, GetParam());
  EXPECT_EQ(o.hello->rank, 5);
  EXPECT_EQ(o.hello->token, "s3cret");
}

INSTANTIATE_TEST_SUITE_P(All, HandshakeKinds,
                         ::testing::Values(ConnectionKind::kStore, ConnectionKind::kStoreLifeline,
                                           ConnectionKind::kData));

TEST(Handshake, EmptyTokensMatch) {
  Outcome o = run("", [](int fd) {
    client_handshake(fd, Hello{ConnectionKind::kData, -1, ""}, Deadline::after(10s), "server");
  });
  EXPECT_FALSE(o.server_error);
}

struct TokenCase {
  std::string expected, presented;
};

class WrongToken : public ::testing::TestWithParam<TokenCase> {};

TEST_P(WrongToken, IsRefusedOnBothSidesWithoutRevealingTheToken) {
  const auto& c = GetParam();
  std::optional<Error> client_error;
  Outcome o = run(c.expected, [&](int fd) {
    try {
      client_handshake(fd, Hello{ConnectionKind::kStore, 2, c.presented}, Deadline::after(10s),
                       "store at h:1");
    } catch (const Error& e) {
      client_error = e;
    }
  });
  ASSERT_TRUE(client_error);
  EXPECT_EQ(client_error->code(), ErrorCode::kAuth);
  EXPECT_NE(std::string(client_error->what()).find("store at h:1"), std::string::npos);
  EXPECT_NE(std::string(client_error->what()).find("TUTTI_JOB_TOKEN"), std::string::npos);
  ASSERT_TRUE(o.server_error);
  EXPECT_EQ(o.server_error->code(), ErrorCode::kAuth);
  std::string m = o.server_error->what();
  EXPECT_NE(m.find("test peer"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 2"), std::string::npos) << m;
  EXPECT_NE(m.find("wrong job token"), std::string::npos) << m;
  EXPECT_EQ(m.find(c.expected), std::string::npos) << "the expected token leaked: " << m;
}

INSTANTIATE_TEST_SUITE_P(Cases, WrongToken,
                         ::testing::Values(TokenCase{"correct-horse", "correct-hors"},
                                           TokenCase{"correct-horse", "correct-horsf"},
                                           TokenCase{"correct-horse", "correct-horse-battery"},
                                           TokenCase{"correct-horse", ""},
                                           TokenCase{"correct-horse", "Correct-horse"}));

TEST(Handshake, WrongMagicIsRefused) {
  std::byte verdict{42};
  Outcome o = run("t", [&](int fd) {
    send_raw(fd, raw_hello(0x47455420, kProtocolVersion, 1, 0, 1, "t"));  // "GET " of HTTP
    verdict = read_verdict(fd);
  });
  EXPECT_EQ(verdict, std::byte{0});
  ASSERT_TRUE(o.server_error);
  EXPECT_EQ(o.server_error->code(), ErrorCode::kAuth);
  EXPECT_NE(std::string(o.server_error->what()).find("not a tutti client"), std::string::npos);
}

TEST(Handshake, WrongVersionNamesBothVersions) {
  std::byte verdict{42};
  Outcome o = run("t", [&](int fd) {
    send_raw(fd, raw_hello(kMagic, 77, 1, 3, 1, "t"));
    verdict = read_verdict(fd);
  });
  EXPECT_EQ(verdict, std::byte{0});
  ASSERT_TRUE(o.server_error);
  EXPECT_EQ(o.server_error->code(), ErrorCode::kAuth);
  std::string m = o.server_error->what();
  EXPECT_NE(m.find("version 77"), std::string::npos) << m;
  EXPECT_NE(m.find("version " + std::to_string(kProtocolVersion)), std::string::npos) << m;
}

TEST(Handshake, UnknownKindIsRefused) {
  std::byte verdict{42};
  Outcome o = run("t", [&](int fd) {
    send_raw(fd, raw_hello(kMagic, kProtocolVersion, 99, 3, 1, "t"));
    verdict = read_verdict(fd);
  });
  EXPECT_EQ(verdict, std::byte{0});
  ASSERT_TRUE(o.server_error);
  EXPECT_EQ(o.server_error->code(), ErrorCode::kAuth);
}

TEST(Handshake, OversizedTokenIsRefusedWithoutReadingIt) {
  std::byte verdict{42};
  Outcome o = run("t", [&](int fd) {
    send_raw(fd, raw_hello(kMagic, kProtocolVersion, 1, 0, 1u << 30, ""));
    verdict = read_verdict(fd);
  });
  EXPECT_EQ(verdict, std::byte{0});
  ASSERT_TRUE(o.server_error);
  EXPECT_EQ(o.server_error->code(), ErrorCode::kAuth);
  EXPECT_NE(std::string(o.server_error->what()).find(std::to_string(1u << 30)), std::string::npos);
}

TEST(Handshake, ClientRefusesToSendAnOversizedToken) {
  Pipe p = socket_pair();
  try {
    client_handshake(p.client.get(), Hello{ConnectionKind::kStore, 0, std::string(5000, 'x')},
                     Deadline::after(1s), "server");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
  }
}

class Garbage : public ::testing::TestWithParam<int> {};

TEST_P(Garbage, IsRefused) {
  std::mt19937 rng(GetParam());
  std::string bytes(16 + GetParam() % 50, '\0');
  for (auto& b : bytes) b = static_cast<char>(rng());
  Outcome o = run("t", [&](int fd) {
    send_raw(fd, bytes);
    ::shutdown(fd, SHUT_WR);
  });
  ASSERT_TRUE(o.server_error);
  EXPECT_TRUE(o.server_error->code() == ErrorCode::kAuth ||
              o.server_error->code() == ErrorCode::kPeerFailure)
      << o.server_error->what();
}

INSTANTIATE_TEST_SUITE_P(Seeds, Garbage, ::testing::Range(1, 9));

TEST(Handshake, SilentClientTimesOutOnTheServer) {
  Pipe p = socket_pair();
  try {
    server_handshake(p.server.get(), "t", Deadline::after(100ms), "silent stranger");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("silent stranger"), std::string::npos);
  }
}

TEST(Handshake, ServerThatClosesWithoutVerdictIsAPeerFailure) {
  Pipe p = socket_pair();
  p.server.reset();
  try {
    client_handshake(p.client.get(), Hello{ConnectionKind::kData, 1, "t"}, Deadline::after(1s),
                     "rank 4");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerFailure);
    EXPECT_NE(std::string(e.what()).find("rank 4"), std::string::npos);
  }
}

// The decoder the acceptors run over many connections at once: bytes may come one at a time, and
// it never asks for more than a header plus the longest token, whatever the header claims.
TEST(HelloDecoder, AcceptsAHelloDeliveredOneByteAtATime) {
  const std::string bytes = raw_hello(kMagic, kProtocolVersion, 3, 42, 6, "s3cret");
  HelloDecoder decoder("slow peer");
  for (char c : bytes) {
    ASSERT_FALSE(decoder.complete());
    const std::byte b{static_cast<unsigned char>(c)};
    decoder.feed(std::span(&b, 1));
  }
  ASSERT_TRUE(decoder.complete());
  Hello hello = decoder.finish("s3cret");
  EXPECT_EQ(hello.kind, ConnectionKind::kData);
  EXPECT_EQ(hello.rank, 42);
  EXPECT_EQ(hello.token, "s3cret");
}

TEST(HelloDecoder, RefusesABadHeaderBeforeReadingItsToken) {
  const std::string bytes = raw_hello(kMagic, kProtocolVersion, 1, 0, 1u << 30, "");
  HelloDecoder decoder("greedy peer");
  EXPECT_EQ(decoder.wanted(), 16u);
  try {
    decoder.feed(std::as_bytes(std::span(bytes.data(), bytes.size())));
    FAIL() << "a token of 1 GiB was announced and accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAuth);
    EXPECT_NE(std::string(e.what()).find("greedy peer"), std::string::npos) << e.what();
  }
}

TEST(HelloDecoder, DecodeHelloRefusesShortAndOverlongMessages) {
  const std::string hello = raw_hello(kMagic, kProtocolVersion, 1, 0, 1, "t");
  for (const std::string& message : {hello.substr(0, 10), hello.substr(0, 16), hello + "x"}) {
    try {
      decode_hello(std::as_bytes(std::span(message.data(), message.size())), "t", "peer");
      ADD_FAILURE() << message.size() << " bytes were taken for a Hello of " << hello.size();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kAuth) << e.what();
    }
  }
  EXPECT_EQ(decode_hello(std::as_bytes(std::span(hello.data(), hello.size())), "t", "peer").token,
            "t");
}

TEST(Handshake, WireLayoutIsLittleEndian) {
  Pipe p = socket_pair();
  auto client = std::async(std::launch::async, [&] {
    try {
      client_handshake(p.client.get(), Hello{ConnectionKind::kData, 0x01020304, "ab"},
                       Deadline::after(2s), "server");
    } catch (const Error&) {
    }
  });
  std::array<std::byte, 18> got{};
  read_exact(p.server.get(), got, Deadline::after(10s), "client");
  p.server.reset();
  client.get();
  std::string expected = raw_hello(0x54555454, 1, 3, 0x01020304, 2, "ab");
  ASSERT_EQ(expected.size(), got.size());
  EXPECT_EQ(std::memcmp(expected.data(), got.data(), got.size()), 0);
  EXPECT_EQ(static_cast<unsigned char>(got[0]), 0x54);
  EXPECT_EQ(static_cast<unsigned char>(got[8]), 0x04);
}

}  // namespace
}  // namespace tutti::net
