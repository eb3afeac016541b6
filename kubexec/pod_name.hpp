// The host argument an MPI launcher hands kubexec is a hostfile entry: a pod name or its DNS name
// (job-worker-0.job.ns.svc.cluster.local). kubectl wants the pod name, which is the first label.
#pragma once

#include <string>
#include <string_view>

namespace tutti::kubexec {

// The pod name in host, checked to be a DNS-1123 label; anything else (metacharacters, spaces,
// newlines, uppercase, a leading '-') is a kConfig error that shows the name escaped.
std::string pod_from_host(std::string_view host);

}  // namespace tutti::kubexec
