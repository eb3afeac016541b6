// Slurm's compressed lists, as its variables carry them: SLURM_JOB_NODELIST ("node[01-03,07],gpu1")
// and SLURM_TASKS_PER_NODE ("2(x3),1"). One parser for the ranks (bootstrap's local size) and for
// tuttirun (an allocation's hosts).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tutti::slurm {

// "node[01-03,07],gpu1" -> node01 node02 node03 node07 gpu1; every bracket group of a name is
// expanded, zero padding kept. Throws Error(kConfig) naming `what` for a malformed list.
std::vector<std::string> expand_nodelist(std::string_view list, std::string_view what);

// "2(x3),1" -> 2 2 2 1. Throws Error(kConfig) naming `what` when malformed.
std::vector<int> expand_tasks_per_node(std::string_view spec, std::string_view what);

}  // namespace tutti::slurm
