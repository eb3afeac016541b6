// The safety net for shared memory: the runtime unlinks its segments itself, but a rank that was
// SIGKILLed cannot, and /dev/shm outlives every process. tuttirun removes what its job left.
#pragma once

#include <string>

namespace tutti::launcher {

// Removes dir/tutti-<job_id>-* (regular files only). Returns how many were removed.
size_t remove_job_segments(const std::string& job_id, const std::string& dir = "/dev/shm");

}  // namespace tutti::launcher
