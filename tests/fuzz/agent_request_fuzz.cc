// libFuzzer target for the rank agent's request line (what `tuttirun --rank-agent` reads from its
// stdin on a remote host: anything that can reach that stream must be refused cleanly). Beyond "no
// crash, no sanitizer report": every input either throws kConfig or yields a request with a
// command, and that request encodes to one line that decodes back to the same request.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "launcher/rank_agent.hpp"
#include "tutti/error.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "agent request fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti::launcher;
  std::string_view line(reinterpret_cast<const char*>(data), size);
  AgentRequest request;
  try {
    request = decode_agent_request(line);
  } catch (const tutti::Error& e) {
    check(e.code() == tutti::ErrorCode::kConfig, "a refusal is kConfig");
    return 0;
  }
  check(!request.argv.empty() && !request.argv[0].empty(), "an accepted request has a command");
  check(request.rank >= 0 && request.grace_seconds >= 0, "rank and grace are in range");
  const std::string encoded = encode_agent_request(request);
  check(!encoded.empty() && encoded.find('\n') == encoded.size() - 1, "the encoding is one line");
  AgentRequest back = decode_agent_request(std::string_view(encoded).substr(0, encoded.size() - 1));
  check(back.rank == request.rank && back.host == request.host && back.argv == request.argv &&
            back.env == request.env && back.cwd == request.cwd &&
            back.grace_seconds == request.grace_seconds,
        "encode then decode gives the same request");
  return 0;
}
