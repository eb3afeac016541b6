// The real host's interfaces: every Linux host (and network namespace) has a loopback "lo".
#include "net/host_interfaces.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace tutti::net {
namespace {

TEST(HostInterfaces, ListsTheLoopback) {
  auto host = host_interface_addresses();
  auto lo = std::find_if(host.begin(), host.end(), [](const InterfaceAddress& a) {
    return a.name == "lo" && a.address == "127.0.0.1";
  });
  ASSERT_NE(lo, host.end()) << describe_interfaces(host);
  EXPECT_TRUE(lo->loopback);
  EXPECT_TRUE(lo->up);
}

TEST(HostInterfaces, SelectingLoopbackByNameGivesItsIPv4Address) {
  EXPECT_EQ(select_interface_address("=lo", "rank 0"), "127.0.0.1");
}

TEST(HostInterfaces, NoMatchNamesThePatternAndTheLoopback) {
  try {
    select_interface_address("=tutti-no-such-if", "rank 0");
    FAIL() << "matched an interface that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("=tutti-no-such-if"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lo 127.0.0.1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tutti::net
