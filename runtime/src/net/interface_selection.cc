#include "net/interface_selection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace tutti::net {
namespace {

constexpr std::string_view kSetting = "TUTTI_SOCKET_IFNAME";

bool usable(const InterfaceAddress& a, const InterfacePattern& pattern) {
  if (!a.up || a.link_local_ipv6() || !pattern.selects(a.name)) return false;
  return !a.loopback || !pattern.exclude;
}

}  // namespace

bool InterfaceAddress::link_local_ipv6() const {
  if (!ipv6()) return false;
  const std::string bare = address.substr(0, address.find('%'));
  in6_addr parsed{};
  if (::inet_pton(AF_INET6, bare.c_str(), &parsed) != 1) return false;
  return IN6_IS_ADDR_LINKLOCAL(&parsed);
}

std::optional<InterfaceAddress> pick_interface_address(const std::vector<InterfaceAddress>& host,
                                                       const InterfacePattern& pattern) {
  std::optional<InterfaceAddress> first_ipv6;
  for (const InterfaceAddress& a : host) {
    if (!usable(a, pattern)) continue;
    if (!a.ipv6()) return a;
    if (!first_ipv6) first_ipv6 = a;
  }
  return first_ipv6;
}

std::string describe_interfaces(const std::vector<InterfaceAddress>& host) {
  // One entry per interface, in the order the host lists them first, with all its addresses; its
  // flags are the same on every entry getifaddrs gives for it.
  std::vector<std::pair<const InterfaceAddress*, std::string>> entries;
  for (const InterfaceAddress& a : host) {
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const auto& e) { return e.first->name == a.name; });
    if (it == entries.end()) it = entries.insert(entries.end(), {&a, a.name});
    it->second += " " + a.address;
  }
  std::string out;
  for (const auto& [first, text] : entries) {
    out += (out.empty() ? "" : ", ") + text;
    if (first->loopback) out += " (loopback)";
    if (!first->up) out += " (down)";
  }
  return out.empty() ? "no interface with an address" : out;
}

std::string choose_interface_address(const std::vector<InterfaceAddress>& host,
                                     std::string_view pattern_text, std::string_view who,
                                     std::string_view instead) {
  InterfacePattern pattern;
  try {
    pattern = parse_interface_pattern(pattern_text, kSetting);
  } catch (const Error& e) {
    throw make_error(ErrorCode::kConfig, "{}: {}", who, e.what());
  }
  if (auto picked = pick_interface_address(host, pattern)) return picked->address;
  throw make_error(ErrorCode::kConfig,
                   "{}: {}='{}' matches no interface of this host that is up and has a usable "
                   "address (loopback only when named, IPv6 link-local never); this host has: {}. "
                   "Set {} to match one of them, or {} to the address to use",
                   who, kSetting, pattern_text, describe_interfaces(host), kSetting, instead);
}

}  // namespace tutti::net
