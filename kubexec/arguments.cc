#include "kubexec/arguments.hpp"

#include <fmt/format.h>

#include <string_view>

namespace tutti::kubexec {
namespace {

ArgsResult usage_error(const std::string& message) {
  return ArgsResult{std::nullopt, kExitUsage,
                    fmt::format("kubexec: {}\nRun 'kubexec --help' for usage.\n", message)};
}

}  // namespace

bool ssh_option_takes_value(char letter) {
  // From ssh(1): options with an argument. Every other letter is a flag (-x, -T, -n, -q, -4 ...).
  return std::string_view("BbcDEeFIiJLlmOopQRSWw").find(letter) != std::string_view::npos;
}

std::string help_text() {
  return R"(kubexec: run a command in a Kubernetes pod, the way ssh runs it on a host.

Usage: kubexec [ssh options] [--namespace NS] [--container C] [--kubectl PATH] HOST COMMAND...

Runs  kubectl exec -i POD [-n NS] [-c C] -- /bin/sh -c "COMMAND..."  where COMMAND's words are
joined with spaces, exactly as ssh joins them, so quoting written for ssh means the same here.
No local shell is involved. POD is HOST up to its first dot (job-worker-0.job.ns.svc -> job-worker-0)
and must be a DNS-1123 name; anything else is refused. ssh options before HOST (-x, -T, -p 22,
-o Opt=v, -l user, ...) are accepted and ignored, so Open MPI (OMPI_MCA_plm_rsh_agent=kubexec),
PRTE (PRTE_MCA_plm_ssh_agent=kubexec) and Hydra (-launcher-exec kubexec) can call it.

Environment:
  KUBEXEC_KUBECTL    kubectl to run (default: kubectl on PATH)
  KUBEXEC_NAMESPACE  namespace of the pods (default: kubectl's current namespace)
  KUBEXEC_CONTAINER  container in the pod (default: the pod's default container)
  KUBEXEC_RETRIES    retries of transient failures (default 5)
  KUBEXEC_TIMEOUT    no retry starts after this long, e.g. 60, 90s, 5m (default 60s)

Retries: an attempt is retried only when kubectl fails with a transient error (pod not running,
container not found or waiting to start, unable to upgrade connection, error dialing backend)
before the remote command produced any output. Until then kubexec holds back stderr (at most 5s or
64 KiB); stdout passes through at once. Backoff doubles from 0.25s up to 5s. The remote command
itself is never timed out.

Exit status: the remote command's status (kubectl exec forwards it); 255 for a usage error, a bad
host name or bad KUBEXEC_* value; 127 when kubectl cannot be started; 128+N when kubectl is killed
by signal N; kubectl's own status (usually 1) when it fails for good.
)";
}

ArgsResult parse_arguments(std::span<const std::string> args) {
  Invocation inv;
  size_t i = 0;
  auto long_value = [&](std::string_view arg, std::string_view name,
                        std::optional<std::string>& into) -> std::optional<ArgsResult> {
    if (arg == name) {
      if (i + 1 >= args.size()) return usage_error(fmt::format("{} needs a value", name));
      into = args[++i];
      return std::nullopt;
    }
    into = std::string(arg.substr(name.size() + 1));  // --name=value
    return std::nullopt;
  };
  for (; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;
    if (arg == "--help" || arg == "-h") return ArgsResult{std::nullopt, 0, help_text()};
    if (arg == "--version") return ArgsResult{std::nullopt, 0, "kubexec (tutti)\n"};
    if (arg.starts_with("--")) {
      std::optional<ArgsResult> error;
      std::string_view name = arg.substr(0, arg.find('='));
      if (name == "--namespace")
        error = long_value(arg, name, inv.name_space);
      else if (name == "--container")
        error = long_value(arg, name, inv.container);
      else if (name == "--kubectl")
        error = long_value(arg, name, inv.kubectl);
      else
        return usage_error(fmt::format("unknown option '{}'", name));
      if (error) return *error;
      continue;
    }
    // ssh-style bundle: -xT, -p22, -p 22, -qo Opt=v. A value-taking letter ends the bundle.
    for (size_t k = 1; k < arg.size(); ++k) {
      if (!ssh_option_takes_value(arg[k])) continue;
      if (k + 1 == arg.size()) {
        if (i + 1 >= args.size())
          return usage_error(fmt::format("option -{} needs a value", arg[k]));
        ++i;
      }
      break;
    }
  }
  if (i >= args.size()) return usage_error("no host given; write kubexec HOST COMMAND...");
  inv.host = args[i++];
  if (i >= args.size())
    return usage_error(fmt::format(
        "no command given for host '{}'; kubexec runs commands, not interactive shells (use "
        "kubectl exec -it for that)",
        inv.host));
  inv.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return ArgsResult{std::move(inv), 0, ""};
}

}  // namespace tutti::kubexec
