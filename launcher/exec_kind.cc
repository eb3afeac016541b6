#include "launcher/exec_kind.hpp"

namespace tutti::launcher {

std::string_view exec_name(ExecKind kind) {
  switch (kind) {
    case ExecKind::kLocal:
      return "local";
    case ExecKind::kSsh:
      return "ssh";
    case ExecKind::kKubexec:
      return "kubexec";
    case ExecKind::kSrun:
      return "srun";
  }
  return "?";
}

std::optional<ExecKind> parse_exec_kind(std::string_view name) {
  for (ExecKind kind : kExecKinds)
    if (exec_name(kind) == name) return kind;
  return std::nullopt;
}

std::string unreachable_hosts_advice(ExecKind kind) {
  switch (kind) {
    case ExecKind::kLocal:
      return "";
    case ExecKind::kSsh:
      // The probe runs `ssh -o BatchMode=yes -o ConnectTimeout=10 HOST tuttirun --version`: a host
      // that is down, a name that does not resolve, and a password or host-key prompt all end here.
      return "Check that the hosts are up and their names resolve here, that ssh to each of them "
             "works without a password or host-key prompt (tuttirun runs ssh with BatchMode=yes; "
             "--ssh PROGRAM picks another client), or raise --probe-timeout.";
    case ExecKind::kKubexec:
      return "Check that the pods run (kubectl get pods), the names, namespace and container "
             "(KUBEXEC_NAMESPACE, KUBEXEC_CONTAINER), or raise --probe-timeout.";
    case ExecKind::kSrun:
      // The probe is `srun --nodelist=HOST ... tuttirun --version`: a step that cannot start (the
      // allocation ended, a node down, tuttirun missing there) ends here.
      return "Check the allocation (squeue --job $SLURM_JOB_ID) and that tuttirun is at the same "
             "path on its nodes (--remote-tuttirun), or raise --probe-timeout.";
  }
  return "";
}

}  // namespace tutti::launcher
