#include "hostfile/slurm.hpp"

#include "core/error.hpp"
#include "core/slurm_lists.hpp"

namespace tutti::hostfile {

Hostfile from_slurm_allocation(std::string_view nodelist, std::string_view tasks_per_node) {
  std::vector<std::string> nodes = slurm::expand_nodelist(nodelist, "SLURM_JOB_NODELIST");
  std::vector<int> tasks = slurm::expand_tasks_per_node(tasks_per_node, "SLURM_TASKS_PER_NODE");
  if (nodes.size() != tasks.size())
    throw make_error(ErrorCode::kConfig,
                     "SLURM_JOB_NODELIST='{}' names {} nodes but SLURM_TASKS_PER_NODE='{}' counts "
                     "tasks for {}",
                     nodelist, nodes.size(), tasks_per_node, tasks.size());
  Hostfile out;
  for (size_t i = 0; i < nodes.size(); ++i) out.hosts.push_back(Host{nodes[i], tasks[i], {}});
  return out;
}

}  // namespace tutti::hostfile
