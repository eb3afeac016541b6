// Which of a host's addresses a rank (or tuttirun) uses when TUTTI_SOCKET_IFNAME names the
// interfaces: the pure rules, over a list of interface addresses as getifaddrs reports them, so
// they can be tested with any host's shape. net/host_interfaces.hpp reads the real list.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/interface_pattern.hpp"

namespace tutti::net {

// One address of one interface.
struct InterfaceAddress {
  std::string name;     // "eth0"
  std::string address;  // numeric: "10.0.0.2", "fd00::2" (an IPv6 link-local one may carry %scope)
  bool up = false;
  bool loopback = false;

  bool ipv6() const { return address.find(':') != std::string::npos; }
  bool link_local_ipv6() const;  // fe80::/10: needs a scope, no use to a peer on another link
};

// The address the pattern picks: among the addresses of the interfaces it selects that are up and
// not IPv6 link-local, the first IPv4 one, else the first IPv6 one. A loopback interface counts
// only when the pattern lists names to use (it was asked for: "lo", "=lo"), never through an
// exclusion ("^docker"). nullopt when none qualifies.
std::optional<InterfaceAddress> pick_interface_address(const std::vector<InterfaceAddress>& host,
                                                       const InterfacePattern& pattern);

// "lo 127.0.0.1 ::1 (loopback), eth0 10.0.0.2 (down)": the host's interfaces for an error message.
std::string describe_interfaces(const std::vector<InterfaceAddress>& host);

// The numeric address pattern_text (TUTTI_SOCKET_IFNAME) picks among host. Error(kConfig) naming
// who ("rank 3", "tuttirun's store"), the setting and its value, and listing the host's interfaces
// when nothing matches or the pattern is malformed; `instead` is the other way to say the address
// ("TUTTI_ADDR", "--store-addr").
std::string choose_interface_address(const std::vector<InterfaceAddress>& host,
                                     std::string_view pattern_text, std::string_view who,
                                     std::string_view instead = "TUTTI_ADDR");

}  // namespace tutti::net
