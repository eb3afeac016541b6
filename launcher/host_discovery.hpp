// Host discovery for elastic jobs (tuttirun --host-discovery-script, Horovod's convention): a
// script that prints the hosts available now, one "host:slots" (or "host", one slot) per line.
#pragma once

#include <string>

#include "hostfile/hostfile.hpp"

namespace tutti::launcher {

struct Discovery {
  hostfile::Hostfile hosts;  // empty when the script failed
  std::string error;         // why, naming the script; empty on success
};

// Runs `script` with /bin/sh -c, at most `timeout_seconds`; a script that fails, times out or
// prints a line that is not host[:slots] gives an error and no hosts (the caller keeps what it
// knew). Blank lines and lines starting with '#' are skipped.
Discovery discover_hosts(const std::string& script, double timeout_seconds);

// The hosts of the script's output `text` (as discover_hosts reads it); kConfig naming the line.
hostfile::Hostfile parse_discovered(const std::string& text);

}  // namespace tutti::launcher
