#include "kubexec/pod_name.hpp"

#include "core/error.hpp"
#include "hostfile/dns_name.hpp"

namespace tutti::kubexec {

std::string pod_from_host(std::string_view host) {
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
