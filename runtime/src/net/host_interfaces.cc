#include "net/host_interfaces.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>

#include "core/error.hpp"

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

}  // namespace tutti::net
