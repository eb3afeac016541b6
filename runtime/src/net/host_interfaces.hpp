// This host's interface addresses, read with getifaddrs, and the TUTTI_SOCKET_IFNAME selection
// over them (net/interface_selection.hpp holds the rules), and the source address on a route.
#pragma once

#include <optional>
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

// This machine's source address on the route to `host` (a UDP connect: the kernel picks the route,
// no packet is sent), IPv4 or IPv6 as the name resolves. nullopt when the name does not resolve or
// no route exists. 127.0.0.1 (::1) for a loopback host.
std::optional<std::string> address_on_route_to(const std::string& host);

}  // namespace tutti::net
