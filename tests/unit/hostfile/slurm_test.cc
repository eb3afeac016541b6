#include "hostfile/slurm.hpp"

#include <gtest/gtest.h>

#include "tutti/error.hpp"

namespace tutti::hostfile {
namespace {

TEST(SlurmAllocation, NodesWithTheirTasksAsSlots) {
  Hostfile h = from_slurm_allocation("node[1-3]", "2(x2),1");
  ASSERT_EQ(h.hosts.size(), 3u);
  EXPECT_EQ(h.hosts[0].name, "node1");
  EXPECT_EQ(h.hosts[0].slots, 2);
  EXPECT_EQ(h.hosts[2].slots, 1);
  EXPECT_EQ(h.total_slots(), 5);
  try {
    from_slurm_allocation("node[1-3]", "2");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("names 3 nodes but SLURM_TASKS_PER_NODE='2' counts tasks "
                                         "for 1"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace tutti::hostfile
