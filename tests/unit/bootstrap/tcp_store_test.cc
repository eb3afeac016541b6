// TcpStore beyond the common Store behaviour: real processes, strangers, shutdown, lifelines.
#include "bootstrap/tcp_store.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "net/handshake.hpp"
#include "net/wire.hpp"
#include "unit/bootstrap/support/test_util.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

const net::Endpoint kLocal{"127.0.0.1", 0};

net::Endpoint at(uint16_t port) {
  return net::Endpoint{"127.0.0.1", port};
}

// Waits for a child with a deadline (kills it when the deadline passes) and returns its exit code.
int wait_child(pid_t pid, Deadline deadline) {
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (deadline.expired()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(2ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A child rank: reads the store port from a pipe, then meets the others through the store.
int child_rank(int rank, int size, int port_pipe) {
  try {
    uint16_t port = 0;
    if (::read(port_pipe, &port, sizeof(port)) != sizeof(port)) return 10;
    TcpStore store(at(port), "tok", rank, Deadline::after(20s));
    store.set("rank/" + std::to_string(rank), "hello from " + std::to_string(rank));
    store.add("arrived", 1);
    for (int peer = 0; peer < size; ++peer) {
      std::string v = store.get("rank/" + std::to_string(peer), Deadline::after(30s));
      if (v != "hello from " + std::to_string(peer)) return 11;
    }
    std::vector<std::string> keys;
    for (int peer = 0; peer < size; ++peer) keys.push_back("rank/" + std::to_string(peer));
    store.wait(keys, Deadline::after(30s));
    store.add("done", 1);
    return 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "child %d: %s\n", rank, e.what());
    return 12;
  }
}

class TcpStoreProcesses : public ::testing::TestWithParam<int> {};

TEST_P(TcpStoreProcesses, ChildProcessesRendezvous) {
  const int size = GetParam();
  std::vector<pid_t> children;
  std::vector<int> pipes;
  // Fork before the server starts any thread, so the children are plain single-threaded copies.
  for (int rank = 0; rank < size; ++rank) {
    std::array<int, 2> p{};
    ASSERT_EQ(::pipe(p.data()), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(p[1]);
      ::_exit(child_rank(rank, size, p[0]));
    }
    ::close(p[0]);
    pipes.push_back(p[1]);
    children.push_back(pid);
  }
  TcpStoreServer server("127.0.0.1", 0, "tok");
  uint16_t port = server.port();
  for (int fd : pipes) {
    EXPECT_EQ(::write(fd, &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
    ::close(fd);
  }
  for (int rank = 0; rank < size; ++rank)
    EXPECT_EQ(wait_child(children[rank], Deadline::after(60s)), 0) << "rank " << rank;
  TcpStore observer(at(port), "tok", -1, Deadline::after(10s));
  EXPECT_EQ(observer.get("arrived", Deadline::after(1s)), std::to_string(size));
  EXPECT_EQ(observer.get("done", Deadline::after(1s)), std::to_string(size));
  EXPECT_EQ(server.refused_connections(), 0u);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, TcpStoreProcesses, ::testing::Values(1, 2, 3, 4, 7, 8));

TEST(TcpStore, ClientStartedBeforeTheServerConnectsOnceItListens) {
  uint16_t port = testing::free_port();
  auto client = std::async(std::launch::async, [port] {
    return std::make_unique<TcpStore>(at(port), "tok", 1, Deadline::after(20s));
  });
  std::this_thread::sleep_for(30ms);  // lets the client be refused first; holds either way
  TcpStoreServer server("127.0.0.1", port, "tok");
  auto store = client.get();
  store->set("k", "v");
  EXPECT_EQ(store->get("k", Deadline::after(5s)), "v");
  EXPECT_EQ(store->local_address(), "127.0.0.1");
  EXPECT_EQ(store->describe(), "tcp 127.0.0.1:" + std::to_string(port));
}

TEST(TcpStore, WrongTokenIsRefusedWhileTheRightClientKeepsWorking) {
  TcpStoreServer server("127.0.0.1", 0, "right");
  TcpStore good(at(server.port()), "right", 0, Deadline::after(10s));
  good.set("before", "1");
  try {
    TcpStore bad(at(server.port()), "wrong", 1, Deadline::after(10s));
    FAIL() << "a client with the wrong token was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAuth) << e.what();
  }
  EXPECT_TRUE(eventually([&] { return server.refused_connections() == 1; }));
  good.set("after", "2");
  EXPECT_EQ(good.get("before", Deadline::after(5s)), "1");
  EXPECT_EQ(good.get("after", Deadline::after(5s)), "2");
}

TEST(TcpStore, StrangersSpeakingGarbageAreRefusedAndCounted) {
  TcpStoreServer server("127.0.0.1", 0, "tok");
  for (int i = 0; i < 3; ++i) {
    net::Fd stranger = net::connect_tcp(at(server.port()), Deadline::after(10s));
    std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    net::write_all(stranger.get(), std::as_bytes(std::span(junk.data(), junk.size())),
                   Deadline::after(5s), "store");
  }
  EXPECT_TRUE(eventually([&] { return server.refused_connections() == 3; }));
  TcpStore good(at(server.port()), "tok", 0, Deadline::after(10s));
  EXPECT_EQ(good.add("n", 5), 5);
}

TEST(TcpStore, DataConnectionsOnTheStorePortAreRefused) {
  TcpStoreServer server("127.0.0.1", 0, "tok");
  net::Fd fd = net::connect_tcp(at(server.port()), Deadline::after(10s));
  try {
    net::client_handshake(fd.get(), net::Hello{net::ConnectionKind::kData, 3, "tok"},
                          Deadline::after(10s), "store");
    FAIL() << "a data connection was accepted on the store port";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAuth) << e.what();
  }
  EXPECT_TRUE(eventually([&] { return server.refused_connections() == 1; }));
}

size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

// Strangers cost the server no thread: their handshakes run side by side in the accepting thread,
// and only authenticated clients get a thread of their own. They are dropped (told so) once their
// handshake deadline has passed.
TEST(TcpStore, SilentStrangersGetNoThreadAndAreDroppedAfterTheirDeadline) {
  TcpStoreServer server("127.0.0.1", 0, "tok");
  TcpStore first(at(server.port()), "tok", 0, Deadline::after(30s));
  first.set("k", "v");
  const size_t baseline = thread_count();
  std::vector<net::Fd> strangers;
  for (int i = 0; i < 50; ++i)
    strangers.push_back(net::connect_tcp(at(server.port()), Deadline::after(10s)));
  // Accepted after every stranger (the backlog is served in order): once it is served, all of
  // them have been accepted. It adds one thread, for itself.
  TcpStore second(at(server.port()), "tok", 1, Deadline::after(30s));
  EXPECT_EQ(second.get("k", Deadline::after(30s)), "v");
  EXPECT_LE(thread_count(), baseline + 1)
      << "the server started threads for unauthenticated strangers";
  for (auto& s : strangers) {
    std::array<std::byte, 1> verdict{};
    net::read_exact(s.get(), verdict, Deadline::after(60s), "store");
    EXPECT_EQ(verdict[0], net::kHelloRefused);
  }
  EXPECT_TRUE(eventually([&] { return server.refused_connections() == strangers.size(); }));
}

// The cap on unauthenticated connections never turns away a job's ranks: 1024 of them connecting
// at once (every connection open before any says Hello) are all accepted.
TEST(TcpStore, AThousandRanksConnectingAtOnceAreAllAccepted) {
  constexpr int kRanks = 1024;
  TcpStoreServer server("127.0.0.1", 0, "tok");
  std::vector<net::Fd> sockets;
  for (int i = 0; i < kRanks; ++i)
    sockets.push_back(net::connect_tcp(at(server.port()), Deadline::after(30s)));
  for (int i = 0; i < kRanks; ++i) {
    net::wire::Writer hello;
    hello.u32(net::kMagic);
    hello.u16(net::kProtocolVersion);
    hello.u16(static_cast<uint16_t>(net::ConnectionKind::kStore));
    hello.i32(i);
    hello.str("tok");
    net::write_all(sockets[i].get(), hello.view(), Deadline::after(30s), "store");
  }
  int accepted = 0;
  for (auto& s : sockets) {
    std::array<std::byte, 1> verdict{};
    net::read_exact(s.get(), verdict, Deadline::after(60s), "store");
    accepted += verdict[0] == net::kHelloAccepted ? 1 : 0;
  }
  EXPECT_EQ(accepted, kRanks);
  EXPECT_EQ(server.refused_connections(), 0u);
}

TEST(TcpStore, DestroyingTheServerReleasesBlockedAndIdleClients) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0, "tok");
  uint16_t port = server->port();
  TcpStore idle(at(port), "tok", 0, Deadline::after(10s));
  TcpStore waiter(at(port), "tok", 1, Deadline::after(10s));
  net::Fd silent = net::connect_tcp(at(port), Deadline::after(10s));  // never says hello
  idle.set("x", "1");
  auto blocked = std::async(std::launch::async, [&] {
    try {
      waiter.get("never", Deadline::never());
      return ErrorCode::kInternal;
    } catch (const Error& e) {
      return e.code();
    }
  });
  auto blocked_wait = std::async(std::launch::async, [&] {
    try {
      TcpStore another(at(port), "tok", 2, Deadline::after(10s));
      another.wait({"never"}, Deadline::never());
      return ErrorCode::kInternal;
    } catch (const Error& e) {
      return e.code();
    }
  });
  std::this_thread::sleep_for(50ms);  // lets the waiters reach the server; holds either way
  server.reset();                     // must return promptly, not wait for the clients
  EXPECT_EQ(blocked.get(), ErrorCode::kPeerFailure);
  ErrorCode w = blocked_wait.get();
  EXPECT_TRUE(w == ErrorCode::kPeerFailure || w == ErrorCode::kTimeout) << static_cast<int>(w);
  try {
    idle.set("y", "2");
    FAIL() << "a set on a dead store succeeded";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kPeerFailure || e.code() == ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
}

// A rank that outlives the rank hosting the store (mpirun, torchrun's variables) must not spend
// TUTTI_TIMEOUT on each store call of its exit: once the client has reached the server, a refused
// connection means the server has ended, and every call fails at once.
TEST(TcpStore, CallsAfterTheServerEndedFailAtOnce) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0, "tok");
  const uint16_t port = server->port();
  // A request timeout far longer than the test's bound: a retry to it would show.
  TcpStore client(at(port), "tok", 1, Deadline::after(10s), std::chrono::minutes(2));
  client.set("x", "1");
  server.reset();
  // The first call finds its pooled connection closed; the later ones are refused.
  for (int call = 0; call < 3; ++call) {
    const auto started = std::chrono::steady_clock::now();
    try {
      client.set("y", "2");
      FAIL() << "a set on an ended store succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerFailure) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "call " << call;
  }
}

TEST(TcpStore, ServesManyClientsConcurrently) {
  TcpStoreServer server("127.0.0.1", 0, "tok");
  constexpr int kClients = 16;
  std::vector<std::future<void>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::async(std::launch::async, [&, i] {
      TcpStore s(at(server.port()), "tok", i, Deadline::after(20s));
      s.set("c/" + std::to_string(i), "x");
      s.add("sum", i);
      for (int j = 0; j < kClients; ++j) s.get("c/" + std::to_string(j), Deadline::after(30s));
    }));
  }
  for (auto& c : clients) c.get();
  TcpStore s(at(server.port()), "tok", -1, Deadline::after(10s));
  EXPECT_EQ(s.add("sum", 0), kClients * (kClients - 1) / 2);
}

TEST(StoreLifeline, FiresOnceWhenTheServerIsDestroyed) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0, "tok");
  std::atomic<int> calls{0};
  std::promise<void> lost;
  StoreLifeline lifeline(at(server->port()), "tok", 0, Deadline::after(10s), [&] {
    if (calls.fetch_add(1) == 0) lost.set_value();
  });
  server.reset();
  ASSERT_EQ(lost.get_future().wait_for(20s), std::future_status::ready);
  EXPECT_EQ(calls.load(), 1);
}

TEST(StoreLifeline, DoesNotFireWhenTheLifelineItselfIsDestroyed) {
  TcpStoreServer server("127.0.0.1", 0, "tok");
  std::atomic<int> calls{0};
  {
    StoreLifeline lifeline(at(server.port()), "tok", 0, Deadline::after(10s), [&] { ++calls; });
  }
  // The server keeps serving other clients after a lifeline leaves.
  TcpStore store(at(server.port()), "tok", 0, Deadline::after(10s));
  store.set("k", "v");
  EXPECT_EQ(calls.load(), 0);
}

TEST(StoreLifeline, FiresWhenTheServerProcessIsKilled) {
  std::array<int, 2> p{};
  ASSERT_EQ(::pipe(p.data()), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(p[0]);
    TcpStoreServer server("127.0.0.1", 0, "tok");
    uint16_t port = server.port();
    if (::write(p[1], &port, sizeof(port)) != sizeof(port)) ::_exit(1);
    ::pause();  // until killed, like a launcher that dies
    ::_exit(0);
  }
  ::close(p[1]);
  uint16_t port = 0;
  ASSERT_EQ(::read(p[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  ::close(p[0]);
  std::promise<void> lost;
  StoreLifeline lifeline(at(port), "tok", 3, Deadline::after(10s), [&] { lost.set_value(); });
  ::kill(pid, SIGKILL);
  EXPECT_EQ(wait_child(pid, Deadline::after(20s)), 128 + SIGKILL);
  EXPECT_EQ(lost.get_future().wait_for(20s), std::future_status::ready);
}

// The pipes this process holds, by descriptor.
std::vector<int> open_pipes() {
  std::vector<int> fds;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (!ec && target.starts_with("pipe:")) fds.push_back(std::stoi(entry.path().filename()));
  }
  std::sort(fds.begin(), fds.end());
  return fds;
}

TEST(StoreLifeline, BeatsOnWhenAnotherPartOfTheProcessClosesItsWakeUpPipe) {
  // A descriptor closed twice elsewhere in a rank can be the lifeline's wake-up pipe: the
  // heartbeats must go on (the thread used to end silently and the launcher then took the working
  // rank for hung), and destroying the lifeline must still stop the thread promptly.
  TcpStoreServer server("127.0.0.1", 0, "tok");
  std::atomic<int> silent{0};
  server.watch_heartbeats(std::chrono::milliseconds(2500),
                          [&](int64_t, int32_t, double) { ++silent; });
  const std::vector<int> before = open_pipes();
  auto lifeline = std::make_unique<StoreLifeline>(
      at(server.port()), "tok", 1, Deadline::after(10s), [] {}, 7);
  int closed = 0;
  for (int fd : open_pipes())
    if (!std::binary_search(before.begin(), before.end(), fd)) closed += ::close(fd) == 0 ? 1 : 0;
  ASSERT_EQ(closed, 2) << "the lifeline's wake-up pipe was not found";
  std::this_thread::sleep_for(4s);
  EXPECT_EQ(silent.load(), 0) << "the heartbeats stopped when the pipe went";
  // Destroying it still ends the thread, which only the stop flag can do now that the pipe is gone
  // (a deadline against a hang, not a timing).
  auto destroyed = std::async(std::launch::async, [&] { lifeline.reset(); });
  ASSERT_EQ(destroyed.wait_for(20s), std::future_status::ready)
      << "the lifeline's thread never ended";
}

TEST(StoreLifeline, WrongTokenIsRefused) {
  TcpStoreServer server("127.0.0.1", 0, "tok");
  try {
    StoreLifeline lifeline(at(server.port()), "nope", 0, Deadline::after(10s), [] {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAuth);
  }
}

}  // namespace
}  // namespace tutti::bootstrap
