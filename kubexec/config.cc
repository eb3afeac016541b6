#include "kubexec/config.hpp"

#include "core/error.hpp"
#include "core/parse.hpp"
#include "hostfile/dns_name.hpp"

namespace tutti::kubexec {
namespace {

std::string label_or_throw(const std::string& value, std::string_view variable) {
  std::string problem = hostfile::label_problem(value);
  if (!problem.empty())
    throw make_error(ErrorCode::kConfig, "{}='{}' is not a Kubernetes name: {}", variable,
                     hostfile::printable(value), problem);
  return value;
}

}  // namespace

Config config_from_env(const EnvLookup& lookup) {
  Config config;
  if (auto v = lookup("KUBEXEC_KUBECTL")) config.kubectl = *v;
  if (auto v = lookup("KUBEXEC_NAMESPACE"))
    config.name_space = label_or_throw(*v, "KUBEXEC_NAMESPACE");
  if (auto v = lookup("KUBEXEC_CONTAINER"))
    config.container = label_or_throw(*v, "KUBEXEC_CONTAINER");
  // 0 is meaningful here: no retry after the first attempt (it never limits the remote command).
  if (auto v = lookup("KUBEXEC_TIMEOUT"))
    config.timeout_seconds = parse::seconds(*v, "KUBEXEC_TIMEOUT");
  if (auto v = lookup("KUBEXEC_RETRIES"))
    config.retries = static_cast<int>(parse::integer(*v, "KUBEXEC_RETRIES", 0, kMaxRetries));
  return config;
}

}  // namespace tutti::kubexec
