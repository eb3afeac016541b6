// kubexec: ssh-compatible remote exec into Kubernetes pods. See `kubexec --help`.
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "kubexec/arguments.hpp"
#include "kubexec/attempt.hpp"
#include "kubexec/config.hpp"
#include "kubexec/run.hpp"
#include "tutti/error.hpp"

int main(int argc, char** argv) {
  using namespace tutti::kubexec;
  std::signal(SIGPIPE, SIG_IGN);  // a vanished reader must not kill us before kubectl's status
  std::vector<std::string> args(argv + 1, argv + argc);
  ArgsResult parsed = parse_arguments(args);
  if (!parsed.should_run()) {
    write_all(parsed.exit_code == 0 ? STDOUT_FILENO : STDERR_FILENO, parsed.message);
    return parsed.exit_code;
  }
  try {
    return run(*parsed.invocation, config_from_env(tutti::env::process_value), STDOUT_FILENO,
               STDERR_FILENO);
  } catch (const tutti::Error& e) {
    write_all(STDERR_FILENO, std::string("kubexec: ") + e.what() + "\n");
    return e.code() == tutti::ErrorCode::kSystem ? kExitKubectlNotFound : kExitUsage;
  } catch (const std::exception& e) {
    write_all(STDERR_FILENO, std::string("kubexec: internal error: ") + e.what() + "\n");
    return kExitUsage;
  }
}
