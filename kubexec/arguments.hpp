// kubexec's argv: [ssh-style options] HOST COMMAND... Open MPI (plm_rsh_agent), PRTE
// (plm_ssh_agent) and Hydra (bootstrap exec) call it as they would call ssh, so ssh's options are
// accepted and skipped (they mean nothing to kubectl), including those that take a value.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tutti::kubexec {

// ssh reports its own failures as 255; kubexec does the same so that remote statuses 1..254 pass
// through unambiguously.
inline constexpr int kExitUsage = 255;
inline constexpr int kExitKubectlNotFound = 127;

struct Invocation {
  std::string host;                       // as given, before the domain is stripped
  std::vector<std::string> command;       // never empty
  std::optional<std::string> name_space;  // --namespace, overrides KUBEXEC_NAMESPACE
  std::optional<std::string> container;   // --container, overrides KUBEXEC_CONTAINER
  std::optional<std::string> kubectl;     // --kubectl, overrides KUBEXEC_KUBECTL
};

struct ArgsResult {
  std::optional<Invocation> invocation;
  int exit_code = 0;
  std::string message;  // help or version for stdout (exit 0), else the usage error for stderr

  bool should_run() const { return invocation.has_value(); }
};

// args excludes argv[0]. Never throws for bad input.
ArgsResult parse_arguments(std::span<const std::string> args);

// True for the ssh options whose value follows (-p 22, -o Opt=v, -l user, -i key, -F cfg, ...).
bool ssh_option_takes_value(char letter);

std::string help_text();

}  // namespace tutti::kubexec
