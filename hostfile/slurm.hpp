// A Slurm allocation as a Hostfile: the node names of SLURM_JOB_NODELIST with the task counts of
// SLURM_TASKS_PER_NODE as slots (both in Slurm's compressed form: core/slurm_lists.hpp).
#pragma once

#include <string_view>

#include "hostfile/hostfile.hpp"

namespace tutti::hostfile {

// The hosts of an allocation: one per node, its tasks as slots. Throws Error(kConfig) when the two
// lists disagree on the node count.
Hostfile from_slurm_allocation(std::string_view nodelist, std::string_view tasks_per_node);

}  // namespace tutti::hostfile
