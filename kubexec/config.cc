#include "kubexec/config.hpp"

#include <charconv>
#include <cstdlib>

#include "core/env.hpp"
#include "core/error.hpp"
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

std::optional<std::string> process_env(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

Config config_from_env(const EnvLookup& lookup) {
  Config config;
  if (auto v = lookup("KUBEXEC_KUBECTL")) config.kubectl = *v;
  if (auto v = lookup("KUBEXEC_NAMESPACE"))
    config.name_space = label_or_throw(*v, "KUBEXEC_NAMESPACE");
  if (auto v = lookup("KUBEXEC_CONTAINER"))
    config.container = label_or_throw(*v, "KUBEXEC_CONTAINER");
  if (auto v = lookup("KUBEXEC_TIMEOUT"))
    config.timeout_seconds = env::parse_seconds(*v, "KUBEXEC_TIMEOUT");
  if (auto v = lookup("KUBEXEC_RETRIES")) {
    int retries = -1;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), retries);
    if (ec != std::errc() || end != v->data() + v->size() || retries < 0 || retries > kMaxRetries)
      throw make_error(ErrorCode::kConfig,
                       "KUBEXEC_RETRIES='{}' is not a retry count; use 0 (no retries) to {}",
                       hostfile::printable(*v), kMaxRetries);
    config.retries = retries;
  }
  return config;
}

}  // namespace tutti::kubexec
