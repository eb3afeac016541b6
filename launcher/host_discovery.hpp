// Host discovery for elastic jobs (tuttirun --host-discovery-script, Horovod's convention): a
// script that prints the hosts available now, one "host:slots" (or "host", one slot) per line.
#pragma once

#include <optional>
#include <string>

#include "core/deadline.hpp"
#include "hostfile/hostfile.hpp"
#include "launcher/child_process.hpp"

namespace tutti::launcher {

struct Discovery {
  hostfile::Hostfile hosts;  // empty when the script failed
  std::string error;         // why, naming the script; empty on success
};

// One run of the script (/bin/sh -c), watched without blocking: the supervisor's loop polls it
// between forwarding the ranks' output, so a slow script (kubectl against a busy API server) never
// stalls the job. A script that fails, runs past `timeout_seconds` (it is killed) or prints a line
// that is not host[:slots] gives an error and no hosts (the caller keeps what it knew). Blank lines
// and lines starting with '#' are skipped.
class DiscoveryRun {
 public:
  DiscoveryRun(const std::string& script, double timeout_seconds);
  // Reads what the script printed so far; its result once it ended, else nullopt. Never blocks.
  std::optional<Discovery> poll();

 private:
  Discovery fail(const std::string& why);

  std::string script_;
  double timeout_seconds_;
  Deadline deadline_;
  ChildProcess child_;
  net::Fd out_, err_;
  std::string text_, errors_;
};

// A DiscoveryRun waited for (at the job's start, and in tests).
Discovery discover_hosts(const std::string& script, double timeout_seconds);

// The hosts of the script's output `text` (as discover_hosts reads it); kConfig naming the line.
hostfile::Hostfile parse_discovered(const std::string& text);

}  // namespace tutti::launcher
