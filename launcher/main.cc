// tuttirun: start a tutti job on this host. See `tuttirun --help`.
#include <unistd.h>

#include <string>
#include <vector>

#include "launcher/launcher.hpp"
#include "launcher/options.hpp"
#include "launcher/output_sink.hpp"
#include "launcher/rank_agent.hpp"
#include "tutti/error.hpp"

int main(int argc, char** argv) {
  using namespace tutti::launcher;
  FdSink console(STDOUT_FILENO, STDERR_FILENO);
  std::vector<std::string> args(argv + 1, argv + argc);
  // What the ssh/kubexec backends run on a rank's host (see rank_agent.hpp); not a user option.
  if (args.size() == 1 && args[0] == "--rank-agent") return run_rank_agent(60.0);
  ParseResult parsed = parse_options(args);
  if (!parsed.should_run()) {
    console.write(parsed.exit_code == 0 ? Stream::kStdout : Stream::kStderr, parsed.message);
    return parsed.exit_code;
  }
  try {
    return run_job(*parsed.options);
  } catch (const tutti::Error& e) {
    console.write(Stream::kStderr, std::string("tuttirun: ") + e.what() + "\n");
    return 1;
  } catch (const std::exception& e) {
    console.write(Stream::kStderr, std::string("tuttirun: internal error: ") + e.what() + "\n");
    return 1;
  }
}
