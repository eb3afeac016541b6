#include "launcher/host_source.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

FileExists files(std::vector<std::string> present) {
  return [present](const std::string& p) {
    return std::find(present.begin(), present.end(), p) != present.end();
  };
}

std::string error_of(const HostOptions& o, EnvLookup env = env_of({}), FileExists f = files({})) {
  try {
    select_hosts(o, env, f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HostList, SlotsAndDefaults) {
  hostfile::Hostfile h = parse_host_list("a:2,b,c.example.com:1", 3);
  ASSERT_EQ(h.hosts.size(), 3u);
  EXPECT_EQ(h.hosts[0].name, "a");
  EXPECT_EQ(h.hosts[0].slots, 2);
  EXPECT_EQ(h.hosts[1].slots, 3);
  EXPECT_EQ(h.hosts[2].name, "c.example.com");
  EXPECT_EQ(h.hosts[2].slots, 1);
}

TEST(HostList, BadEntriesNameTheProblem) {
  for (std::string bad :
       {"a:0", "a:-1", "a:x", "a:2:3", "A_B", "a,a", "$(reboot)", "a b", ",,", "-rf"}) {
    try {
      parse_host_list(bad, 1);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig) << bad;
      EXPECT_NE(std::string(e.what()).find("-H"), std::string::npos) << e.what();
    }
  }
}

TEST(SelectHosts, NothingGivenMeansThisHost) {
  HostSelection s = select_hosts({}, env_of({}), files({}));
  EXPECT_EQ(s.origin, HostOrigin::kThisHost);
  EXPECT_TRUE(s.hosts.hosts.empty());
}

TEST(SelectHosts, PodsWithSlots) {
  HostOptions o;
  o.pods = "job-worker-0,job-worker-1";
  o.slots = 4;
  HostSelection s = select_hosts(o, env_of({}), files({}));
  EXPECT_EQ(s.origin, HostOrigin::kPods);
  ASSERT_EQ(s.hosts.hosts.size(), 2u);
  EXPECT_EQ(s.hosts.hosts[1].name, "job-worker-1");
  EXPECT_EQ(s.hosts.total_slots(), 8);
}

TEST(SelectHosts, OneSourceAtATime) {
  HostOptions o;
  o.pods = "a";
  o.host_list = "b";
  EXPECT_NE(error_of(o).find("one way"), std::string::npos);
  HostOptions slots_with_file;
  slots_with_file.hostfile = "/nonexistent";
  slots_with_file.slots = 2;
  EXPECT_NE(error_of(slots_with_file).find("--slots"), std::string::npos);
  HostOptions bad_pod;
  bad_pod.pods = "ok,Bad;rm";
  EXPECT_FALSE(error_of(bad_pod).empty());
}

TEST(SelectHosts, MpiJobHostfileFromTheEnvironmentOrEtcMpi) {
  std::string path = ::testing::TempDir() + "/mpijob_hostfile";
  std::ofstream(path) << "pi-worker-0.pi.default.svc slots=2\npi-worker-1.pi.default.svc slots=2\n";
  HostSelection s = select_hosts({},
                                 env_of({{"OMPI_MCA_orte_default_hostfile", path},
                                         {"OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"}}),
                                 files({}));
  EXPECT_EQ(s.origin, HostOrigin::kMpiJob);
  EXPECT_EQ(s.source, path);
  EXPECT_EQ(s.hosts.total_slots(), 4);
  EXPECT_EQ(s.mpijob_agent, "/etc/mpi/kubexec.sh");

  EXPECT_EQ(mpijob_hostfile(env_of({{"PRTE_MCA_prte_default_hostfile", "/x"}}), files({})), "/x");
  // mpiImplementation Intel and MPICH: the operator names its hostfile with Hydra's variables.
  EXPECT_EQ(mpijob_hostfile(env_of({{"I_MPI_HYDRA_HOST_FILE", "/i"}}), files({})), "/i");
  EXPECT_EQ(mpijob_hostfile(env_of({{"HYDRA_HOST_FILE", "/m"}}), files({})), "/m");
  EXPECT_EQ(mpijob_hostfile(env_of({}), files({"/etc/mpi/hostfile"})), "/etc/mpi/hostfile");
  EXPECT_EQ(mpijob_hostfile(env_of({}), files({})), std::nullopt);
  std::remove(path.c_str());
}

TEST(SelectHosts, HostfileErrorsNameFileAndLine) {
  std::string path = ::testing::TempDir() + "/bad_hostfile";
  std::ofstream(path) << "good slots=1\nbad slots=0\n";
  HostOptions o;
  o.hostfile = path;
  EXPECT_NE(error_of(o).find(path + ":2"), std::string::npos) << error_of(o);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tutti::launcher

namespace tutti::launcher {
namespace {

// tuttirun in an salloc shell or a batch script: the allocation's nodes, its tasks per node as
// slots; inside one of its job steps (SLURM_STEP_ID) it is a task, not a launcher of them.
TEST(SelectHosts, ASlurmAllocation) {
  const std::map<std::string, std::string> alloc = {{"SLURM_JOB_ID", "42"},
                                                    {"SLURM_JOB_NODELIST", "node[1-3]"},
                                                    {"SLURM_TASKS_PER_NODE", "2(x2),1"}};
  HostSelection s = select_hosts({}, env_of(alloc), files({}));
  EXPECT_EQ(s.origin, HostOrigin::kSlurm);
  EXPECT_EQ(s.source, "the Slurm allocation (job 42)");
  ASSERT_EQ(s.hosts.hosts.size(), 3u);
  EXPECT_EQ(s.hosts.hosts[0].name, "node1");
  EXPECT_EQ(s.hosts.total_slots(), 5);

  auto in_step = alloc;
  in_step["SLURM_STEP_ID"] = "0";
  EXPECT_EQ(select_hosts({}, env_of(in_step), files({})).origin, HostOrigin::kThisHost);
  // Hosts given on the command line win over the allocation.
  HostOptions o;
  o.host_list = "a:2";
  EXPECT_EQ(select_hosts(o, env_of(alloc), files({})).origin, HostOrigin::kHostList);
  // An allocation by nodes only: one slot per node.
  auto nodes_only = alloc;
  nodes_only.erase("SLURM_TASKS_PER_NODE");
  EXPECT_EQ(select_hosts({}, env_of(nodes_only), files({})).hosts.total_slots(), 3);
}

}  // namespace
}  // namespace tutti::launcher
