// A Slurm allocation as a Hostfile: the node names of SLURM_JOB_NODELIST, which Slurm writes in its
// compressed form ("node[01-03,07],gpu1"), with the task counts of SLURM_TASKS_PER_NODE
// ("2(x3),1": the first three nodes run 2 tasks, the fourth 1) as slots.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hostfile/hostfile.hpp"

namespace tutti::hostfile {

// "node[01-03,07],gpu1" -> node01 node02 node03 node07 gpu1; every bracket group of a name is
// expanded, zero padding kept. Throws Error(kConfig) naming `what` for a malformed list.
std::vector<std::string> expand_slurm_nodelist(std::string_view list, std::string_view what);

// "2(x3),1" -> 2 2 2 1. Throws Error(kConfig) naming `what` when malformed.
std::vector<int> expand_slurm_tasks_per_node(std::string_view spec, std::string_view what);

// The hosts of an allocation: one per node, its tasks as slots. Throws Error(kConfig) when the two
// lists disagree on the node count.
Hostfile from_slurm_allocation(std::string_view nodelist, std::string_view tasks_per_node);

}  // namespace tutti::hostfile
