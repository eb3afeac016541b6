#include "kubexec/pod_name.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "core/error.hpp"
#include "hostfile/dns_name.hpp"

namespace tutti::kubexec {

std::string pod_from_host(std::string_view host) {
  // "10.0.0.1" passes as a DNS name whose first label is "10": kubectl would then exec into a pod
  // named 10. An address means the hostfile lists addresses where kubexec needs pod names.
  in_addr v4{};
  in6_addr v6{};
  const std::string text(host);
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, text.c_str(), &v6) == 1)
    throw make_error(
        ErrorCode::kConfig,
        "host '{}' is an IP address, not a pod name: kubexec runs kubectl exec POD, so the "
        "hostfile must list pod names (tutti-hostfile --pods makes one)",
        hostfile::printable(host));
  // The whole name is checked, not just the pod label: a host with a hostile domain part is a
  // sign that the caller passed something other than a hostfile entry.
  std::string problem = hostfile::subdomain_problem(host);
  std::string_view pod = host.substr(0, host.find('.'));
  if (problem.empty()) problem = hostfile::label_problem(pod);
  if (!problem.empty())
    throw make_error(ErrorCode::kConfig,
                     "host '{}' is not a pod name: {}; kubexec takes a pod name or its DNS name "
                     "(POD.SERVICE.NAMESPACE.svc...)",
                     hostfile::printable(host), problem);
  return std::string(pod);
}

}  // namespace tutti::kubexec
