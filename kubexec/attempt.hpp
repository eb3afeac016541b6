// One run of kubectl: its stdout goes straight to ours, its stderr is held back until the remote
// command has shown signs of life, so that a transient kubectl failure can be retried without the
// caller ever seeing a half-started attempt.
#pragma once

#include <string>
#include <vector>

namespace tutti::kubexec {

struct AttemptResult {
  int exit_code = 0;        // kubectl's status, or 128+N when a signal N ended it
  bool committed = false;   // output reached our stdout/stderr: this attempt cannot be retried
  std::string held_stderr;  // stderr not yet forwarded (only when !committed)
};

// Starts argv (argv[0] looked up on PATH when it has no '/'), inheriting our stdin, and waits for
// it: the remote command runs as long as the job does, so there is no deadline here. Throws
// kSystem when kubectl cannot be started at all.
AttemptResult run_attempt(const std::vector<std::string>& argv, int out_fd, int err_fd);

// Writes all of text to fd, ignoring a closed reader (EPIPE): our caller may have gone away.
void write_all(int fd, std::string_view text);

}  // namespace tutti::kubexec
