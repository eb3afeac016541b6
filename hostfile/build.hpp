// Building a hostfile from what a Kubernetes user has: pod names, or an MPIJob's name and worker
// count (the operator names workers NAME-worker-0 .. NAME-worker-(N-1)).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hostfile/hostfile.hpp"

namespace tutti::hostfile {

// "a,b,c" as given to --pods. Names are checked by from_pods.
std::vector<std::string> split_pod_list(std::string_view text);

// A pods file: names separated by blanks or newlines, '#' comments; a "pod/" prefix is dropped so
// `kubectl get pods -o name` output works as is. Bad names are kConfig "SOURCE:LINE: ...".
std::vector<std::string> parse_pods_file(std::string_view text, std::string_view source);

// NAME-worker-0 .. NAME-worker-(workers-1); kConfig if workers < 1 or the names would not be valid
// pod names.
std::vector<std::string> job_pod_names(std::string_view job, int workers);

// The DNS suffix of an MPIJob's headless service: "NAME.NAMESPACE.svc" (append ".cluster.local" or
// your cluster domain with --domain if the pods' resolver needs the full name).
std::string job_domain(std::string_view job, std::string_view ns);

// One host per pod with `slots` each, named POD or POD.DOMAIN when domain is not empty. Pod names
// must be DNS-1123 labels (kubexec maps a host back to its pod by the first label) and unique.
Hostfile from_pods(const std::vector<std::string>& pods, int slots, std::string_view domain);

}  // namespace tutti::hostfile
