// The safety net for shared memory: the runtime unlinks its segments itself, but a rank that was
// SIGKILLed cannot, and /dev/shm outlives every process. tuttirun removes what its job left.
#pragma once

#include <string>

namespace tutti::launcher {

// Removes dir/tutti-<job_id>-* (regular files only). Returns how many were removed.
size_t remove_job_segments(const std::string& job_id, const std::string& dir = "/dev/shm");

// This host's claim on a job id while tuttirun runs the job: an abstract Unix socket named after
// the id (and `dir`), bound and listening for the claim's life. Two jobs with one --job-id on one
// host share every shared-memory name, and the first to finish swept the other's segments away
// (both failed, one rank hung, with a /dev/shm message): the second now fails at once, naming the
// first's pid. A claim dies with its process and leaves no file behind.
class JobIdClaim {
 public:
  // Error(kConfig) naming the other tuttirun's pid when another live claim holds the id.
  explicit JobIdClaim(const std::string& job_id, const std::string& dir = "/dev/shm");
  ~JobIdClaim();
  JobIdClaim(const JobIdClaim&) = delete;
  JobIdClaim& operator=(const JobIdClaim&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tutti::launcher
