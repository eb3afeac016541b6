#include "net/host_interfaces.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>

#include "core/error.hpp"
#include "net/fd.hpp"

namespace tutti::net {

std::vector<InterfaceAddress> host_interface_addresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw_system_error("getifaddrs", errno);
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> guard(list, &::freeifaddrs);
  std::vector<InterfaceAddress> out;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    char host[NI_MAXHOST] = {};
    if (::getnameinfo(a->ifa_addr, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0)
      continue;
    out.push_back(InterfaceAddress{.name = a->ifa_name,
                                   .address = host,
                                   .up = (a->ifa_flags & IFF_UP) != 0,
                                   .loopback = (a->ifa_flags & IFF_LOOPBACK) != 0});
  }
  return out;
}

std::string select_interface_address(std::string_view pattern_text, std::string_view who,
                                     std::string_view instead) {
  return choose_interface_address(host_interface_addresses(), pattern_text, who, instead);
}

std::optional<std::string> address_on_route_to(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;  // IPv4 first where the name has both (getaddrinfo's order)
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr)
    return std::nullopt;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  if (found->ai_family == AF_INET) {
    const auto* target = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
    if ((ntohl(target->sin_addr.s_addr) >> 24) == 127) return "127.0.0.1";
  } else if (found->ai_family == AF_INET6) {
    const auto* target = reinterpret_cast<const sockaddr_in6*>(found->ai_addr);
    if (IN6_IS_ADDR_LOOPBACK(&target->sin6_addr)) return "::1";
  }
  Fd fd(::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return std::nullopt;
  if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0) return std::nullopt;
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return std::nullopt;
  char text[NI_MAXHOST] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&local), len, text, sizeof text, nullptr, 0,
                    NI_NUMERICHOST) != 0)
    return std::nullopt;
  return std::string(text);
}

}  // namespace tutti::net
