// This host's interface addresses, read with getifaddrs, and the TUTTI_SOCKET_IFNAME selection
// over them (net/interface_selection.hpp holds the rules).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "net/interface_selection.hpp"

namespace tutti::net {

// Every IPv4 and IPv6 address of every interface, in the kernel's order. Throws kSystem when
// getifaddrs fails.
std::vector<InterfaceAddress> host_interface_addresses();

// choose_interface_address over this host's interfaces.
std::string select_interface_address(std::string_view pattern_text, std::string_view who,
                                     std::string_view instead = "TUTTI_ADDR");

}  // namespace tutti::net
