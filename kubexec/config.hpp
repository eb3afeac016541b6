// kubexec is configured by environment variables because Open MPI and Hydra call it with nothing
// but a host and a command. These are KUBEXEC_* (the names mpi-operator users already set), not
// TUTTI_*, so they are read through a lookup function rather than the TUTTI_* registry (main passes
// env::process_value, tests their own).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tutti::kubexec {

struct Config {
  std::string kubectl = "kubectl";  // KUBEXEC_KUBECTL: path or name looked up on PATH
  std::string name_space;           // KUBEXEC_NAMESPACE: empty means kubectl's current namespace
  std::string container;            // KUBEXEC_CONTAINER: empty means the pod's default container
  double timeout_seconds = 60;      // KUBEXEC_TIMEOUT: no retry starts after this much time
  int retries = 5;                  // KUBEXEC_RETRIES: retries of transient kubectl failures
};

inline constexpr int kMaxRetries = 1000;

using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// Unset or empty variables keep the defaults. A malformed value is a kConfig error naming the
// variable (a namespace or container must be a DNS-1123 label).
Config config_from_env(const EnvLookup& lookup);

}  // namespace tutti::kubexec
