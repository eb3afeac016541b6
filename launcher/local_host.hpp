// Where this machine stands among the job's hosts: whether a host name means this machine (so the
// local backend can run its ranks), and which of this machine's addresses the ranks can reach the
// rendezvous store at.
#pragma once

#include <optional>
#include <string>

#include "net/host_interfaces.hpp"

namespace tutti::launcher {

using net::address_on_route_to;

// "localhost", a loopback address, or this machine's hostname (short or full). No DNS lookup: a
// name that merely resolves to one of our addresses still counts as another host, as in mpirun.
bool is_this_host(const std::string& host);

// The address of the interface that carries the default route (from /proc/net/route): in a pod,
// the pod IP. nullopt when there is no default route.
std::optional<std::string> default_route_address();

}  // namespace tutti::launcher
