#include "launcher/mpirun_mode.hpp"

#include <charconv>

namespace tutti::launcher {

std::optional<int> open_mpi_major(std::string_view text) {
  constexpr std::string_view kMarker = "(Open MPI) ";
  size_t at = text.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + kMarker.size());
  int major = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), major);
  if (ec != std::errc() || end == rest.data()) return std::nullopt;
  return major;
}

MpirunCommand mpirun_command(const MpirunInputs& in) {
  MpirunCommand out;
  out.argv.push_back(in.mpirun);
  if (!in.hostfile_path.empty()) out.argv.insert(out.argv.end(), {"--hostfile", in.hostfile_path});
  if (in.np > 0) out.argv.insert(out.argv.end(), {"-np", std::to_string(in.np)});
  for (const std::string& name : in.forwarded) out.argv.insert(out.argv.end(), {"-x", name});
  out.argv.insert(out.argv.end(), in.command.begin(), in.command.end());
  if (!in.remote_shell.empty()) {
    if (in.major >= 5)
      out.env.emplace_back("PRTE_MCA_plm_ssh_agent", in.remote_shell);
    else
      out.env.emplace_back("OMPI_MCA_plm_rsh_agent", in.remote_shell);
  }
  if (in.no_tree_spawn)
    out.env.emplace_back(
        in.major >= 5 ? "PRTE_MCA_plm_ssh_no_tree_spawn" : "OMPI_MCA_plm_rsh_no_tree_spawn", "1");
  return out;
}

}  // namespace tutti::launcher
