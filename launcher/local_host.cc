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
#include <vector>

#include "core/error.hpp"
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

// Whether `host` resolves to an address of one of this machine's interfaces.
bool resolves_to_this_machine(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  std::vector<net::InterfaceAddress> mine;
  try {
    mine = net::host_interface_addresses();
  } catch (const Error&) {
    return false;
  }
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST] = {};
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) !=
        0)
      continue;
    for (const net::InterfaceAddress& m : mine)
      if (m.address == text) return true;
  }
  return false;
}

}  // namespace

bool is_this_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.starts_with("127.")) return true;
  std::string me = own_hostname();
  if (me.empty()) return false;
  std::string me_short = me.substr(0, me.find('.'));
  if (host == me || host == me_short) return true;
  // A pod's DNS name (an MPIJob launcher that runs ranks too lists itself as
  // JOB-launcher.JOB.NS.svc while its hostname is JOB-launcher): the first label must be our
  // hostname and the name must lead here.
  return host.substr(0, host.find('.')) == me_short && host.find('.') != std::string::npos &&
         resolves_to_this_machine(host);
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
