// Where this machine stands among the job's hosts: whether a host name means this machine (so the
// local backend can run its ranks), and which of this machine's addresses the ranks can reach the
// rendezvous store at.
#pragma once

#include <optional>
#include <string>

#include "net/host_interfaces.hpp"

namespace tutti::launcher {

using net::address_on_route_to;

// "localhost", a loopback address, this machine's hostname (short or full), or a longer DNS name
// whose first label is our hostname and that resolves to one of our addresses (a pod's
// POD.SUBDOMAIN.NS.svc). A name that merely resolves here, under another first label, still
// counts as another host.
bool is_this_host(const std::string& host);

// The address of the interface that carries the default route (from /proc/net/route): in a pod,
// the pod IP. nullopt when there is no default route.
std::optional<std::string> default_route_address();

}  // namespace tutti::launcher
