// The rank agent: `tuttirun --rank-agent`, what a remote backend (ssh, kubexec) runs on the rank's
// host. tuttirun sends the rank's environment and argv as one JSON line on the agent's stdin, so
// neither goes through a remote shell (nothing to quote, nothing to inject, and the job token never
// shows in a process list). They are bytes, not text: the line carries them base64-encoded, so
// every byte but NUL arrives exactly as local mode would pass it. The agent runs the rank in a
// process group of its own, passes its output straight through, and exits with its status. When its
// stdin closes (tuttirun stopped the job, or the exec stream died) it stops the rank: SIGTERM, then
// SIGKILL after the grace period, and kills whatever the rank left behind, so no process of the job
// outlives it on that host.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tutti::launcher {

struct AgentRequest {
  int rank = 0;
  std::string host;                                      // as tuttirun names it, for messages
  std::vector<std::string> argv;                         // argv[0] looked up on the rank's PATH
  std::vector<std::pair<std::string, std::string>> env;  // set over the host's environment
  std::string cwd;                                       // used when it exists on the host
  double grace_seconds = 5.0;                            // between SIGTERM and SIGKILL
  // Arrange MASTER_ADDR/MASTER_PORT for torch.distributed through the job's store before the rank
  // starts (launcher/torch_env.hpp); false when the user gave them.
  bool torch_master = false;
};

// One line of JSON, '\n'-terminated.
std::string encode_agent_request(const AgentRequest& request);
// kConfig naming what is wrong when the line is not a request tuttirun wrote.
AgentRequest decode_agent_request(std::string_view line);

// The agent's main: reads the request from stdin (within request_timeout_seconds), runs the rank,
// and returns the exit code to exit with (the rank's, 128 + signal when it was killed; 127 when it
// cannot be started; 125 for a broken request).
int run_rank_agent(double request_timeout_seconds);

}  // namespace tutti::launcher
