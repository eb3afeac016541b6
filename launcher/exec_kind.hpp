// How a job's ranks start: forked on this host, through ssh, through kubexec into pods, or as
// tasks of the Slurm allocation tuttirun runs in (srun). It is
// chosen once per job (--exec, or from where the hosts came from) and travels as this enum, so
// every place that depends on it is a switch the compiler checks for a forgotten kind.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace tutti::launcher {

enum class ExecKind { kLocal, kSsh, kKubexec, kSrun };

inline constexpr std::array<ExecKind, 4> kExecKinds = {ExecKind::kLocal, ExecKind::kSsh,
                                                       ExecKind::kKubexec, ExecKind::kSrun};

// The --exec spelling: "local", "ssh", "kubexec", "srun".
std::string_view exec_name(ExecKind kind);
// nullopt for anything that is not an exec_name().
std::optional<ExecKind> parse_exec_kind(std::string_view name);

// What a user can check or change when hosts never answered the probe through this kind of exec
// (one sentence, or empty where there is no probe: local ranks need no reachable host).
std::string unreachable_hosts_advice(ExecKind kind);

}  // namespace tutti::launcher
