// Runs one job from parsed options: store server, plan, ranks, supervision, cleanup.
#pragma once

#include "launcher/options.hpp"

namespace tutti::launcher {

// Returns tuttirun's exit code. Errors that stop the job before it runs are printed, not thrown.
int run_job(const LaunchOptions& options);

}  // namespace tutti::launcher
