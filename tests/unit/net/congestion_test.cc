#include "net/congestion.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "net/fd.hpp"
#include "net/socket.hpp"

namespace tutti::net {
namespace {

constexpr std::string_view kSetting = "TUTTI_TCP_CONGESTION";

bool kernel_has(const std::string& name) {
  const auto all = available_congestion_controls();
  return std::find(all.begin(), all.end(), name) != all.end();
}

Fd tcp_socket() {
  Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  if (!fd.valid()) ADD_FAILURE() << "socket: " << std::strerror(errno);
  return fd;
}

std::string in_use(int fd) {
  std::array<char, 16> name{};
  socklen_t length = name.size();
  EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), &length), 0);
  return std::string(name.data(), strnlen(name.data(), name.size()));
}

// A socket as a host whose default is `name` hands it out.
void give(int fd, const std::string& name) {
  ASSERT_EQ(
      setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())),
      0)
      << name << ": " << std::strerror(errno);
}

TEST(ParseCongestion, AutoSystemAndNames) {
  EXPECT_EQ(parse_congestion("", kSetting).mode, CongestionSetting::Mode::kAuto);
  EXPECT_EQ(parse_congestion("auto", kSetting).mode, CongestionSetting::Mode::kAuto);
  EXPECT_EQ(parse_congestion("system", kSetting).mode, CongestionSetting::Mode::kSystem);
  for (const char* name : {"cubic", "reno", "dctcp", "bbr", "htcp", "lp", "my_cc-2"}) {
    const CongestionSetting s = parse_congestion(name, kSetting);
    EXPECT_EQ(s.mode, CongestionSetting::Mode::kNamed) << name;
    EXPECT_EQ(s.name, name);
  }
}

TEST(ParseCongestion, RefusesWhatNoKernelCouldName) {
  for (const char* text :
       {"CUBIC", "cubic reno", "cubic;reno", " cubic", "a_sixteen_chars_", "über", "cubic\n"}) {
    try {
      parse_congestion(text, kSetting);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig);
      const std::string what = e.what();
      EXPECT_NE(what.find("TUTTI_TCP_CONGESTION='"), std::string::npos) << what;
      EXPECT_NE(what.find("auto"), std::string::npos) << what;
      EXPECT_NE(what.find("system"), std::string::npos) << what;
    }
  }
}

TEST(ApplyCongestion, SystemKeepsTheKernelsChoice) {
  Fd fd = tcp_socket();
  const std::string before = in_use(fd.get());
  const CongestionResult r =
      apply_congestion(fd.get(), {CongestionSetting::Mode::kSystem, ""}, "x");
  EXPECT_EQ(r.before, before);
  EXPECT_EQ(r.after, before);
  EXPECT_EQ(in_use(fd.get()), before);
}

TEST(ApplyCongestion, AutoSwitchesBbrToCubic) {
  if (!kernel_has("bbr") || !kernel_has("cubic"))
    GTEST_SKIP() << "the kernel lacks bbr or cubic (net.ipv4.tcp_available_congestion_control)";
  Fd fd = tcp_socket();
  give(fd.get(), "bbr");
  const CongestionResult r = apply_congestion(fd.get(), {}, "x");
  EXPECT_EQ(r.before, "bbr");
  EXPECT_EQ(r.after, "cubic");
  EXPECT_TRUE(r.note.empty()) << r.note;
  EXPECT_EQ(in_use(fd.get()), "cubic");
}

TEST(ApplyCongestion, AutoKeepsAnyOtherChoice) {
  for (const std::string name : {"reno", "cubic"}) {
    if (!kernel_has(name)) continue;
    Fd fd = tcp_socket();
    give(fd.get(), name);
    const CongestionResult r = apply_congestion(fd.get(), {}, "x");
    EXPECT_EQ(r.before, name);
    EXPECT_EQ(r.after, name);
    EXPECT_EQ(in_use(fd.get()), name);
  }
}

TEST(ApplyCongestion, NamedSetsIt) {
  if (!kernel_has("reno")) GTEST_SKIP() << "the kernel lacks reno";
  Fd fd = tcp_socket();
  const CongestionResult r =
      apply_congestion(fd.get(), parse_congestion("reno", kSetting), "rank 1 on host b");
  EXPECT_EQ(r.after, "reno");
  EXPECT_EQ(in_use(fd.get()), "reno");
}

TEST(ApplyCongestion, NamedThatTheKernelLacksFailsClearly) {
  Fd fd = tcp_socket();
  const std::string before = in_use(fd.get());
  try {
    apply_congestion(fd.get(), parse_congestion("nosuchcc", kSetting), "rank 1 on host b");
    FAIL() << "accepted a congestion control the kernel lacks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    const std::string what = e.what();
    EXPECT_NE(what.find("TUTTI_TCP_CONGESTION"), std::string::npos) << what;
    EXPECT_NE(what.find("nosuchcc"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1 on host b"), std::string::npos) << what;
    EXPECT_NE(what.find("tcp_available_congestion_control"), std::string::npos) << what;
  }
  EXPECT_EQ(in_use(fd.get()), before);
}

// The choice is made before the handshake so that the kernel's default (BBR on many hosts) never
// starts on a data connection: BBR's start turns the kernel's own pacing on for good.
TEST(ApplyCongestion, AnAcceptedConnectionTakesItsListenersChoice) {
  if (!kernel_has("reno")) GTEST_SKIP() << "the kernel lacks reno";
  uint16_t port = 0;
  Fd listener = listen_tcp("127.0.0.1", 0, &port);
  const std::string other = in_use(listener.get()) == "reno" ? "cubic" : "reno";
  if (!kernel_has(other)) GTEST_SKIP() << "the kernel lacks " << other;
  apply_congestion(listener.get(), parse_congestion(other, kSetting), "the listener");
  Fd client = connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(std::chrono::seconds(10)));
  Fd server = accept_tcp(listener.get(), Deadline::after(std::chrono::seconds(10)));
  ASSERT_TRUE(server.valid());
  EXPECT_EQ(in_use(server.get()), other);
}

TEST(ApplyCongestion, ConnectTcpChoosesBeforeTheHandshake) {
  uint16_t port = 0;
  Fd listener = listen_tcp("127.0.0.1", 0, &port);
  // Not the kernel's default, so that the choice is seen to hold.
  const std::string other = in_use(listener.get()) == "reno" ? "cubic" : "reno";
  if (!kernel_has(other)) GTEST_SKIP() << "the kernel lacks " << other;
  int calls = 0;
  bool connected_already = true;
  Fd client = connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(std::chrono::seconds(10)),
                          RefusedConnection::kRetry, [&](int fd) {
                            ++calls;
                            sockaddr_storage peer{};
                            socklen_t length = sizeof(peer);
                            connected_already =
                                getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0;
                            apply_congestion(fd, parse_congestion(other, kSetting), "a peer");
                          });
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(connected_already) << "the hook ran after connect()";
  EXPECT_EQ(in_use(client.get()), other);
}

TEST(ApplyCongestion, ANamedChoiceTheKernelLacksStopsTheConnectAndNamesTheConnection) {
  uint16_t port = 0;
  Fd listener = listen_tcp("127.0.0.1", 0, &port);
  try {
    connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(std::chrono::seconds(10)),
                RefusedConnection::kRetry, [&](int fd) {
                  apply_congestion(fd, parse_congestion("nosuchcc", kSetting),
                                   "the data connection to rank 1 on host b");
                });
    FAIL() << "connected with a congestion control the kernel lacks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    const std::string what = e.what();
    EXPECT_NE(what.find("for the data connection to rank 1 on host b"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tutti::net
