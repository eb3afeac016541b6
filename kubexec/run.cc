#include "kubexec/run.hpp"

#include <fmt/format.h>

#include <thread>

#include "core/deadline.hpp"
#include "kubexec/attempt.hpp"
#include "kubexec/pod_name.hpp"
#include "kubexec/remote_command.hpp"
#include "kubexec/retry.hpp"

namespace tutti::kubexec {
namespace {

std::string first_line(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  return std::string(line.substr(0, 200));
}

}  // namespace

int run(const Invocation& invocation, Config config, int out_fd, int err_fd) {
  if (invocation.kubectl) config.kubectl = *invocation.kubectl;
  // Command-line overrides go through the same checks as the environment.
  Config overrides = config_from_env([&](std::string_view name) -> std::optional<std::string> {
    if (name == "KUBEXEC_NAMESPACE") return invocation.name_space;
    if (name == "KUBEXEC_CONTAINER") return invocation.container;
    return std::nullopt;
  });
  if (invocation.name_space) config.name_space = overrides.name_space;
  if (invocation.container) config.container = overrides.container;

  std::string pod = pod_from_host(invocation.host);
  std::vector<std::string> argv = kubectl_argv(config, pod, join_command(invocation.command));
  Deadline deadline = Deadline::after_seconds(config.timeout_seconds);
  for (int retry = 0;; ++retry) {
    AttemptResult attempt = run_attempt(argv, out_fd, err_fd);
    bool retryable =
        attempt.exit_code != 0 && !attempt.committed && is_transient_failure(attempt.held_stderr);
    if (!retryable || retry >= config.retries || deadline.expired()) {
      if (retryable)
        write_all(err_fd, fmt::format("kubexec: giving up on pod {} after {} attempts ({}): ", pod,
                                      retry + 1,
                                      retry >= config.retries ? "KUBEXEC_RETRIES reached"
                                                              : "KUBEXEC_TIMEOUT passed"));
      write_all(err_fd, attempt.held_stderr);
      return attempt.exit_code;
    }
    auto delay = std::min<std::chrono::nanoseconds>(backoff_delay(retry), deadline.remaining());
    write_all(err_fd,
              fmt::format("kubexec: pod {} not ready ({}); retry {}/{} in {}ms\n", pod,
                          first_line(attempt.held_stderr), retry + 1, config.retries,
                          std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()));
    std::this_thread::sleep_for(delay);  // backoff, bounded by the retry deadline
  }
}

}  // namespace tutti::kubexec
