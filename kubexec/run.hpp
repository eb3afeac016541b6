// kubexec from parsed arguments to exit status: resolve the pod, build kubectl's argv, run it,
// and retry transient failures within KUBEXEC_RETRIES and KUBEXEC_TIMEOUT.
#pragma once

#include "kubexec/arguments.hpp"
#include "kubexec/config.hpp"

namespace tutti::kubexec {

// Returns the exit status for main. Throws kConfig for a bad host name, kSystem when kubectl
// cannot be started.
int run(const Invocation& invocation, Config config, int out_fd, int err_fd);

}  // namespace tutti::kubexec
