// Kubernetes names (RFC 1123 as Kubernetes applies it): what a pod name, a namespace, a container
// name or a pod's DNS name may look like. Both tutti-hostfile and kubexec refuse anything else, so
// no host name can carry shell metacharacters, spaces, option dashes or control characters.
#pragma once

#include <string>
#include <string_view>

namespace tutti::hostfile {

inline constexpr size_t kMaxLabelLength = 63;
inline constexpr size_t kMaxNameLength = 253;

// Why `name` is not a DNS-1123 label (lowercase a-z, 0-9 and '-', starting and ending with a
// letter or digit, at most 63 characters); empty when it is one.
std::string label_problem(std::string_view name);

// Why `name` is not a DNS-1123 subdomain (dot-separated labels, at most 253 characters in all);
// empty when it is one.
std::string subdomain_problem(std::string_view name);

// The name made safe to print in an error message: control and non-ASCII bytes as \xNN, at most
// 80 characters, so a hostile name cannot forge lines on a terminal or in a log.
std::string printable(std::string_view name);

}  // namespace tutti::hostfile
