// What kubexec asks kubectl to run. ssh sends the remote shell its arguments joined by spaces;
// Open MPI relies on that (it passes values with literal quotes, e.g. -mca ess "env"), so kubexec
// joins the same way and hands the string to /bin/sh -c in the pod, as one argv element.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kubexec/config.hpp"

namespace tutti::kubexec {

// The arguments joined with single spaces, unmodified (ssh's rule).
std::string join_command(std::span<const std::string> command);

// argv for kubectl (argv[0] is config.kubectl): exec -i POD [-n NS] [-c C] -- /bin/sh -c JOINED.
std::vector<std::string> kubectl_argv(const Config& config, const std::string& pod,
                                      const std::string& joined_command);

}  // namespace tutti::kubexec
