#include "net/interface_selection.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"

namespace tutti::net {
namespace {

// A host as getifaddrs lists it: a loopback, a default-route interface, a docker bridge, a data
// network with IPv4 and IPv6 (link-local first, as the kernel lists them), a down interface and
// an IPv6-only one.
const std::vector<InterfaceAddress> kHost = {
    {.name = "lo", .address = "127.0.0.1", .up = true, .loopback = true},
    {.name = "eth0", .address = "10.0.0.2", .up = true},
    {.name = "docker0", .address = "172.17.0.1", .up = true},
    {.name = "data0", .address = "fe80::1%data0", .up = true},
    {.name = "data0", .address = "fd00::2", .up = true},
    {.name = "data0", .address = "198.18.5.2", .up = true},
    {.name = "ib0", .address = "192.168.9.9", .up = false},
    {.name = "v6net", .address = "fe80::7%v6net", .up = true},
    {.name = "v6net", .address = "2001:db8::7", .up = true},
    {.name = "lo", .address = "::1", .up = true, .loopback = true},
};

std::string picked(const std::string& pattern, const std::vector<InterfaceAddress>& host = kHost) {
  auto a = pick_interface_address(host, parse_interface_pattern(pattern, "TUTTI_SOCKET_IFNAME"));
  return a ? a->address : "none";
}

TEST(PickInterfaceAddress, PrefixPicksTheFirstMatchingInterface) {
  EXPECT_EQ(picked("eth"), "10.0.0.2");
  EXPECT_EQ(picked("doc,eth"), "10.0.0.2");  // the host's order, not the pattern's
  EXPECT_EQ(picked("docker"), "172.17.0.1");
}

TEST(PickInterfaceAddress, PrefersIPv4OnTheSameInterface) {
  EXPECT_EQ(picked("data"), "198.18.5.2");
}

TEST(PickInterfaceAddress, PrefersIPv4AcrossInterfaces) {
  EXPECT_EQ(picked("v6net,data"), "198.18.5.2");
}

TEST(PickInterfaceAddress, IPv6WhenOnlyIPv6MatchesAndNeverLinkLocal) {
  EXPECT_EQ(picked("v6"), "2001:db8::7");
  std::vector<InterfaceAddress> only_link_local = {
      {.name = "v6net", .address = "fe80::7%v6net", .up = true}};
  EXPECT_EQ(picked("v6", only_link_local), "none");
}

TEST(PickInterfaceAddress, ExclusionSkipsLoopbackAndTheExcluded) {
  EXPECT_EQ(picked("^eth"), "172.17.0.1");
  EXPECT_EQ(picked("^eth,docker"), "198.18.5.2");
  EXPECT_EQ(picked("^=eth0,docker0,data0"), "2001:db8::7");
  EXPECT_EQ(picked("^eth,docker,data,v6"), "none");  // only lo and the down ib0 are left
}

TEST(PickInterfaceAddress, LoopbackOnlyWhenNamed) {
  EXPECT_EQ(picked("lo"), "127.0.0.1");
  EXPECT_EQ(picked("=lo"), "127.0.0.1");
  std::vector<InterfaceAddress> v6_loopback = {
      {.name = "lo", .address = "::1", .up = true, .loopback = true}};
  EXPECT_EQ(picked("lo", v6_loopback), "::1");
}

TEST(PickInterfaceAddress, ExactNamesDoNotMatchPrefixes) {
  EXPECT_EQ(picked("=eth"), "none");
  EXPECT_EQ(picked("=data0"), "198.18.5.2");
}

TEST(PickInterfaceAddress, DownInterfacesAreSkipped) {
  EXPECT_EQ(picked("ib"), "none");
}

TEST(InterfaceAddress, LinkLocalIsFe80Slash10) {
  EXPECT_TRUE((InterfaceAddress{.name = "x", .address = "fe80::1%x"}.link_local_ipv6()));
  EXPECT_TRUE((InterfaceAddress{.name = "x", .address = "febf::1"}.link_local_ipv6()));
  EXPECT_FALSE((InterfaceAddress{.name = "x", .address = "fec0::1"}.link_local_ipv6()));
  EXPECT_FALSE((InterfaceAddress{.name = "x", .address = "169.254.1.1"}.link_local_ipv6()));
}

TEST(ChooseInterfaceAddress, ReturnsThePickedAddress) {
  EXPECT_EQ(choose_interface_address(kHost, "data", "rank 2"), "198.18.5.2");
}

TEST(ChooseInterfaceAddress, NoMatchIsAConfigErrorListingTheHost) {
  try {
    choose_interface_address(kHost, "=bond0", "rank 3");
    FAIL() << "no interface should match";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    const std::string what = e.what();
    for (const char* part :
         {"rank 3", "TUTTI_SOCKET_IFNAME='=bond0'", "TUTTI_ADDR", "lo 127.0.0.1 ::1 (loopback)",
          "eth0 10.0.0.2", "data0 fe80::1%data0 fd00::2 198.18.5.2", "ib0 192.168.9.9 (down)"})
      EXPECT_NE(what.find(part), std::string::npos) << "missing '" << part << "' in: " << what;
  }
}

TEST(ChooseInterfaceAddress, EmptyPatternIsAConfigErrorNamingWho) {
  try {
    choose_interface_address(kHost, "^", "tuttirun");
    FAIL() << "an empty pattern should be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("tuttirun"), std::string::npos) << e.what();
  }
}

TEST(DescribeInterfaces, SaysSoWhenThereAreNone) {
  EXPECT_EQ(describe_interfaces({}), "no interface with an address");
}

}  // namespace
}  // namespace tutti::net
