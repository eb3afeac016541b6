#include "launcher/local_host.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "net/fd.hpp"

namespace tutti::launcher {
namespace {

std::string own_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string ipv4_text(const in_addr& a) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

}  // namespace

bool is_this_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.starts_with("127.")) return true;
  std::string me = own_hostname();
  if (me.empty()) return false;
  std::string me_short = me.substr(0, me.find('.'));
  return host == me || host == me_short;
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
  net::Fd fd(::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
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

std::optional<std::string> default_route_address() {
  std::ifstream routes("/proc/net/route");
  std::string line;
  std::getline(routes, line);  // header
  std::string interface;
  while (std::getline(routes, line)) {
    std::istringstream fields(line);
    std::string iface, destination;
    if (fields >> iface >> destination && destination == "00000000") {
      interface = iface;
      break;
    }
  }
  if (interface.empty()) return std::nullopt;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> guard(list, &::freeifaddrs);
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if (interface == a->ifa_name)
      return ipv4_text(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr);
  }
  return std::nullopt;
}

}  // namespace tutti::launcher
