#include "bootstrap/world_info.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store_factory.hpp"
#include "core/error.hpp"
#include "unit/bootstrap/support/test_util.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using Env = std::map<std::string, std::string>;

// Every variable world_info_from_env() may read. The fixture clears them all before each test and
// puts the original values back afterwards, so tests neither see nor leak launcher variables.
const std::vector<std::string> kVariables = {"TUTTI_RANK",
                                             "TUTTI_SIZE",
                                             "TUTTI_LOCAL_RANK",
                                             "TUTTI_LOCAL_SIZE",
                                             "TUTTI_CROSS_RANK",
                                             "TUTTI_CROSS_SIZE",
                                             "TUTTI_STORE",
                                             "TUTTI_HOST",
                                             "TUTTI_JOB_TOKEN",
                                             "TUTTI_JOB_ID",
                                             "OMPI_COMM_WORLD_RANK",
                                             "OMPI_COMM_WORLD_SIZE",
                                             "OMPI_COMM_WORLD_LOCAL_RANK",
                                             "OMPI_COMM_WORLD_LOCAL_SIZE",
                                             "OMPI_COMM_WORLD_NODE_RANK",
                                             "OMPI_MCA_ess_base_jobid",
                                             "PMI_RANK",
                                             "PMI_SIZE",
                                             "MPI_LOCALRANKID",
                                             "MPI_LOCALNRANKS",
                                             "PMI_JOBID",
                                             "PMI_FD",
                                             "PMI_PORT",
                                             "PMI_ID",
                                             "PMIX_RANK",
                                             "RANK",
                                             "WORLD_SIZE",
                                             "LOCAL_RANK",
                                             "LOCAL_WORLD_SIZE",
                                             "GROUP_RANK",
                                             "GROUP_WORLD_SIZE",
                                             "MASTER_ADDR",
                                             "MASTER_PORT",
                                             "PET_NNODES",
                                             "PET_NODE_RANK",
                                             "PET_NPROC_PER_NODE",
                                             "PET_MASTER_ADDR",
                                             "PET_MASTER_PORT",
                                             "TORCHELASTIC_USE_AGENT_STORE",
                                             "TORCHELASTIC_RUN_ID",
                                             "SLURM_PROCID",
                                             "SLURM_NTASKS",
                                             "SLURM_LOCALID",
                                             "SLURM_NODEID",
                                             "SLURM_NNODES",
                                             "SLURM_TASKS_PER_NODE",
                                             "SLURM_JOB_ID",
                                             "SLURM_STEP_ID",
                                             "SLURM_STEPID",
                                             "TUTTI_LOG_LEVEL",
                                             "TUTTI_TCP_STREAMS",
                                             "TUTTI_LAUNCHER",
                                             "TUTTI_ALOG"};

class WorldInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& name : kVariables) {
      if (const char* v = std::getenv(name.c_str())) saved_[name] = v;
      ::unsetenv(name.c_str());
    }
  }
  void TearDown() override {
    for (const auto& name : kVariables) ::unsetenv(name.c_str());
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  static void set(const Env& env) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(WorldInfoTest, NoLauncherMeansAWorldOfOne) {
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "default");
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.size, 1);
  EXPECT_EQ(w.local_rank, 0);
  EXPECT_EQ(w.local_size, 1);
  EXPECT_TRUE(w.store_address.empty());
  EXPECT_FALSE(w.host_store);
  EXPECT_EQ(w.host_id, default_host_id());
  EXPECT_FALSE(w.job_id.empty());
}

// A misspelt setting is named, with the one meant, by rank 0 only when no tuttirun did it before
// starting the ranks.
TEST_F(WorldInfoTest, AMisspeltSettingIsNamedOnceByRankZeroWithoutTuttirun) {
  set({{"TUTTI_ALOG", "ring"}});
  const auto warned = [] {
    ::testing::internal::CaptureStderr();
    world_info_from_env();
    return ::testing::internal::GetCapturedStderr();
  };
  std::string err = warned();
  EXPECT_NE(err.find("TUTTI_ALOG is not a tutti setting and is ignored; did you mean TUTTI_ALGO?"),
            std::string::npos)
      << err;
  set({{"TUTTI_RANK", "1"}, {"TUTTI_SIZE", "2"}, {"TUTTI_STORE", "127.0.0.1:1"}});
  err = warned();
  EXPECT_EQ(err.find("TUTTI_ALOG"), std::string::npos) << "rank 1 warned too: " << err;
  set({{"TUTTI_RANK", "0"}, {"TUTTI_LAUNCHER", "127.0.0.1:1"}});
  err = warned();
  EXPECT_EQ(err.find("TUTTI_ALOG"), std::string::npos) << "warned under tuttirun: " << err;
}

TEST_F(WorldInfoTest, Tuttirun) {
  set({{"TUTTI_RANK", "5"},
       {"TUTTI_SIZE", "8"},
       {"TUTTI_LOCAL_RANK", "1"},
       {"TUTTI_LOCAL_SIZE", "4"},
       {"TUTTI_CROSS_RANK", "1"},
       {"TUTTI_CROSS_SIZE", "2"},
       {"TUTTI_STORE", "10.0.0.1:29500"},
       {"TUTTI_JOB_TOKEN", "tok"},
       {"TUTTI_JOB_ID", "job7"},
       {"TUTTI_HOST", "pod-a"},
       {"MASTER_ADDR", "elsewhere"},
       {"MASTER_PORT", "1"},
       {"OMPI_COMM_WORLD_RANK", "0"},
       {"OMPI_COMM_WORLD_SIZE", "2"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "tuttirun");
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.size, 8);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_size, 4);
  EXPECT_EQ(w.cross_rank, 1);
  EXPECT_EQ(w.cross_size, 2);
  EXPECT_EQ(w.store_address, "10.0.0.1:29500");  // TUTTI_STORE wins over MASTER_ADDR
  EXPECT_FALSE(w.host_store);
  EXPECT_EQ(w.job_token, "tok");
  EXPECT_EQ(w.job_id, "job7");
  EXPECT_EQ(w.host_id, "pod-a");
}

TEST_F(WorldInfoTest, TuttirunWithoutLocalLayoutLeavesItUnknown) {
  set({{"TUTTI_RANK", "1"}, {"TUTTI_SIZE", "3"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.local_rank, -1);
  EXPECT_EQ(w.local_size, -1);
}

TEST_F(WorldInfoTest, HalfATuttirunLayoutIsAnError) {
  set({{"TUTTI_RANK", "1"}});
  try {
    world_info_from_env();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("TUTTI_SIZE"), std::string::npos);
  }
}

TEST_F(WorldInfoTest, OpenMpi) {
  set({{"OMPI_COMM_WORLD_RANK", "3"},
       {"OMPI_COMM_WORLD_SIZE", "4"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
       {"PMI_RANK", "0"},
       {"PMI_SIZE", "1"},
       {"RANK", "0"},
       {"WORLD_SIZE", "1"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "openmpi");
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.size, 4);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_size, 2);
  EXPECT_TRUE(w.store_address.empty());
}

TEST_F(WorldInfoTest, AnMpiLauncherIsNoticedAndLeavesTheJobIdToTheStore) {
  set({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  WorldInfo w = world_info_from_env();
  EXPECT_TRUE(w.mpi_launcher);
  EXPECT_EQ(w.pmi_fd, -1);
  EXPECT_TRUE(w.job_id.empty()) << w.job_id;  // no launcher id, no store: rank 0 draws one
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  set({{"PMIX_RANK", "0"}});
  EXPECT_TRUE(world_info_from_env().mpi_launcher);
}

TEST_F(WorldInfoTest, PmiConnection) {
  set({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"PMI_FD", "6"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "pmi");
  EXPECT_EQ(w.pmi_fd, 6);
  EXPECT_FALSE(w.mpi_launcher);
  ::unsetenv("PMI_FD");
  set({{"PMI_PORT", "node0:5000"}, {"PMI_ID", "1"}});
  w = world_info_from_env();
  EXPECT_EQ(w.pmi_fd, -1);
  EXPECT_EQ(w.pmi_port, "node0:5000");
  EXPECT_EQ(w.pmi_id, 1);
  set({{"PMI_FD", "six"}});
  try {
    world_info_from_env();
    FAIL() << "PMI_FD=six was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("PMI_FD"), std::string::npos) << e.what();
  }
}

TEST_F(WorldInfoTest, PmiPortAloneLeavesTheNumberingToTheLauncher) {
  set({{"PMI_PORT", "node0:5000"}, {"PMI_ID", "2"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "pmi");
  EXPECT_TRUE(w.numbered_at_rendezvous);
  EXPECT_EQ(w.rank, 2);  // a placeholder until cmd=initack's answer
  EXPECT_EQ(w.pmi_port, "node0:5000");
  EXPECT_TRUE(w.job_id.empty());
}

TEST_F(WorldInfoTest, OpenMpiNodeRankStandsInForAMissingLocalRank) {
  set({{"OMPI_COMM_WORLD_RANK", "2"},
       {"OMPI_COMM_WORLD_SIZE", "4"},
       {"OMPI_COMM_WORLD_NODE_RANK", "0"}});
  EXPECT_EQ(world_info_from_env().local_rank, 0);
}

TEST_F(WorldInfoTest, Pmi) {
  set({{"PMI_RANK", "6"},
       {"PMI_SIZE", "7"},
       {"MPI_LOCALRANKID", "2"},
       {"MPI_LOCALNRANKS", "3"},
       {"MASTER_ADDR", "node0"},
       {"MASTER_PORT", "4000"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "pmi");
  EXPECT_EQ(w.rank, 6);
  EXPECT_EQ(w.size, 7);
  EXPECT_EQ(w.local_rank, 2);
  EXPECT_EQ(w.local_size, 3);
  EXPECT_EQ(w.store_address, "node0:4000");
  EXPECT_FALSE(w.host_store);
}

struct TorchCase {
  int rank;
  bool hosts;
};

class TorchrunRanks : public WorldInfoTest, public ::testing::WithParamInterface<TorchCase> {};

TEST_P(TorchrunRanks, MasterAddressAndRankZeroHostsTheStore) {
  set({{"RANK", std::to_string(GetParam().rank)},
       {"WORLD_SIZE", "8"},
       {"LOCAL_RANK", "1"},
       {"LOCAL_WORLD_SIZE", "4"},
       {"GROUP_RANK", "1"},
       {"MASTER_ADDR", "job-master-0"},
       {"MASTER_PORT", "23456"},
       {"SLURM_PROCID", "0"},
       {"SLURM_NTASKS", "1"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, GetParam().rank);
  EXPECT_EQ(w.size, 8);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_size, 4);
  EXPECT_EQ(w.cross_rank, 1);
  EXPECT_EQ(w.store_address, "job-master-0:23456");
  EXPECT_EQ(w.host_store, GetParam().hosts);
}

INSTANTIATE_TEST_SUITE_P(Ranks, TorchrunRanks,
                         ::testing::Values(TorchCase{0, true}, TorchCase{1, false},
                                           TorchCase{7, false}));

TEST_F(WorldInfoTest, TorchrunAgentStoreOwnsMasterPortSoTuttiUsesTheNext) {
  set({{"RANK", "0"},
       {"WORLD_SIZE", "2"},
       {"MASTER_ADDR", "10.1.1.1"},
       {"MASTER_PORT", "29500"},
       {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  EXPECT_EQ(world_info_from_env().store_address, "10.1.1.1:29501");
}

TEST_F(WorldInfoTest, Ipv6MasterAddressIsBracketed) {
  set({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "fd00::5"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(world_info_from_env().store_address, "[fd00::5]:29500");
}

TEST_F(WorldInfoTest, KubeflowPetVariablesWithoutTorchrun) {
  set({{"PET_NNODES", "4"},
       {"PET_NODE_RANK", "2"},
       {"PET_NPROC_PER_NODE", "1"},
       {"PET_MASTER_ADDR", "job-master-0.job"},
       {"PET_MASTER_PORT", "23456"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.size, 4);
  EXPECT_EQ(w.cross_rank, 2);
  EXPECT_EQ(w.cross_size, 4);
  EXPECT_EQ(w.store_address, "job-master-0.job:23456");
  EXPECT_FALSE(w.host_store);
}

TEST_F(WorldInfoTest, KubeflowPetWithSeveralProcessesPerPod) {
  set({{"PET_NNODES", "4"},
       {"PET_NODE_RANK", "2"},
       {"PET_NPROC_PER_NODE", "2"},
       {"LOCAL_RANK", "1"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.size, 8);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_size, 2);
}

TEST_F(WorldInfoTest, KubeflowPetWithAutoProcessCountNeedsTorchrun) {
  set({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "0"}, {"PET_NPROC_PER_NODE", "auto"}});
  try {
    world_info_from_env();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("PET_NPROC_PER_NODE='auto'"), std::string::npos);
  }
}

struct SlurmCase {
  std::string tasks_per_node;
  int node;
  int local_size;
};

class Slurm : public WorldInfoTest, public ::testing::WithParamInterface<SlurmCase> {};

TEST_P(Slurm, ReadsLayoutAndLocalSizeFromTasksPerNode) {
  set({{"SLURM_PROCID", "6"},
       {"SLURM_NTASKS", "7"},
       {"SLURM_LOCALID", "0"},
       {"SLURM_NODEID", std::to_string(GetParam().node)},
       {"SLURM_NNODES", "4"},
       {"SLURM_TASKS_PER_NODE", GetParam().tasks_per_node},
       {"SLURM_JOB_ID", "1234"},
       {"SLURM_STEP_ID", "3"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "slurm");
  EXPECT_EQ(w.rank, 6);
  EXPECT_EQ(w.size, 7);
  EXPECT_EQ(w.local_rank, 0);
  EXPECT_EQ(w.local_size, GetParam().local_size);
  EXPECT_EQ(w.cross_rank, GetParam().node);
  EXPECT_EQ(w.cross_size, 4);
  // The step is part of the id: two steps of one job on one host are two worlds.
  EXPECT_EQ(w.job_id, "slurm-1234_3");
}

INSTANTIATE_TEST_SUITE_P(Specs, Slurm,
                         ::testing::Values(SlurmCase{"2(x3),1", 3, 1}, SlurmCase{"2(x3),1", 1, 2},
                                           SlurmCase{"1,3,2,1", 2, 2},
                                           SlurmCase{"garbage", 0, -1}));

struct BadCase {
  Env env;
  std::string mentions;
};

class BadValues : public WorldInfoTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadValues, AreAConfigErrorNamingTheVariable) {
  set(GetParam().env);
  try {
    WorldInfo w = world_info_from_env();
    FAIL() << "accepted rank " << w.rank << " of " << w.size;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find(GetParam().mentions), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadValues,
    ::testing::Values(
        BadCase{{{"TUTTI_RANK", "4"}, {"TUTTI_SIZE", "4"}}, "TUTTI_RANK=4"},
        BadCase{{{"TUTTI_RANK", "-1"}, {"TUTTI_SIZE", "4"}}, "TUTTI_RANK='-1' is out of range"},
        BadCase{{{"TUTTI_RANK", "0"}, {"TUTTI_SIZE", "0"}}, "TUTTI_SIZE='0' is out of range"},
        // Values beyond an int used to wrap: 2^32 became rank 0, 2^32 + 2 a size of 2.
        BadCase{{{"TUTTI_RANK", "4294967296"}, {"TUTTI_SIZE", "2"}},
                "TUTTI_RANK='4294967296' is out of range: it must be between 0 and 1048575"},
        BadCase{{{"TUTTI_RANK", "1"}, {"TUTTI_SIZE", "4294967298"}},
                "TUTTI_SIZE='4294967298' is out of range: it must be between 1 and 1048576"},
        BadCase{{{"TUTTI_RANK", "0"}, {"TUTTI_SIZE", "2"}, {"TUTTI_LOCAL_SIZE", "99999999999"}},
                "TUTTI_LOCAL_SIZE='99999999999' is out of range"},
        BadCase{{{"OMPI_COMM_WORLD_RANK", "4294967296"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
                "OMPI_COMM_WORLD_RANK='4294967296' is out of range"},
        BadCase{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-4"}},
                "LOCAL_RANK='-4' is out of range"},
        BadCase{{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "18446744073709551617"}},
                "SLURM_NTASKS='18446744073709551617' is out of range"},
        BadCase{{{"PET_NNODES", "1048576"},
                 {"PET_NODE_RANK", "0"},
                 {"PET_NPROC_PER_NODE", "4"},
                 {"LOCAL_RANK", "0"}},
                "makes 4194304 ranks"},
        BadCase{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "0"}},
                "MASTER_PORT='0' is out of range"},
        BadCase{{{"TUTTI_RANK", "x"}, {"TUTTI_SIZE", "2"}}, "TUTTI_RANK"},
        BadCase{{{"TUTTI_RANK", "0"},
                 {"TUTTI_SIZE", "4"},
                 {"TUTTI_LOCAL_RANK", "2"},
                 {"TUTTI_LOCAL_SIZE", "2"}},
                "TUTTI_LOCAL_RANK=2"},
        BadCase{{{"OMPI_COMM_WORLD_RANK", "9"}, {"OMPI_COMM_WORLD_SIZE", "3"}},
                "OMPI_COMM_WORLD_RANK=9"},
        BadCase{{{"OMPI_COMM_WORLD_RANK", "two"}, {"OMPI_COMM_WORLD_SIZE", "3"}},
                "OMPI_COMM_WORLD_RANK='two'"},
        BadCase{{{"PMI_RANK", "0"}, {"PMI_SIZE", "-2"}}, "PMI_SIZE='-2' is out of range"},
        BadCase{
            {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "99999"}},
            "MASTER_PORT='99999'"},
        BadCase{{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEPID", "0"}},
                "SLURM_NTASKS=2"},
        // A batch script or salloc shell: the allocation's variables, but no job step.
        BadCase{{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "8"}},
                "not a task of a Slurm job step: it runs in the batch script or allocation shell "
                "of job 8 (SLURM_NTASKS=4, no SLURM_STEP_ID). Start the 4 ranks as tasks of the "
                "allocation: `tuttirun PROGRAM` or `srun --mpi=pmi2 PROGRAM`"}));

// An allocation of one task: a plain program in its batch script is a world of one.
TEST_F(WorldInfoTest, ABatchScriptOfOneTaskIsAWorldOfOne) {
  set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "9"}});
  WorldInfo w = world_info_from_env();
  EXPECT_EQ(w.source, "default");
  EXPECT_EQ(w.size, 1);
  EXPECT_EQ(w.job_id, "slurm-9");
}

// Init reads every TUTTI_* variable that is set, so a typo fails the job at once instead of being
// ignored (TUTTI_LOG_LEVEL) or surfacing only when a transport first reads it (TUTTI_TCP_STREAMS).
TEST_F(WorldInfoTest, ABadValueOfAnyTuttiVariableFailsInit) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"TUTTI_LOG_LEVEL=loud", "TUTTI_LOG_LEVEL='loud' is not one of error|warn|info|debug|trace"},
      {"TUTTI_TCP_STREAMS=0",
       "TUTTI_TCP_STREAMS='0' is out of range: it must be between 1 and 16"}};
  for (const auto& [assignment, mention] : cases) {
    const std::string name = assignment.substr(0, assignment.find('='));
    set({{name, assignment.substr(name.size() + 1)}});
    try {
      world_info_from_env();
      ADD_FAILURE() << "accepted " << assignment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig);
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
    }
    ::unsetenv(name.c_str());
  }
}

TEST_F(WorldInfoTest, JobIdIsTheSameForEveryRankOfAJob) {
  set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1234"}});
  std::string first = world_info_from_env().job_id;
  set({{"RANK", "1"}});
  EXPECT_EQ(world_info_from_env().job_id, first);
  for (char c : first)
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
}

TEST(DefaultHostId, IsHostnameAndBootId) {
  std::string id = default_host_id();
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  EXPECT_TRUE(id.starts_with(std::string(host.data()))) << id;
  EXPECT_EQ(id, default_host_id());
}

// open_store turns the addresses above into stores.
class OpenStoreTest : public WorldInfoTest {};

TEST_F(OpenStoreTest, WorldOfOneWithoutAddressGetsAMemoryStore) {
  WorldInfo w;
  StoreConnection c = open_store(w, Deadline::after(5s), 5s);
  EXPECT_FALSE(c.server);
  EXPECT_EQ(c.store->describe(), "memory");
  EXPECT_EQ(c.local_address, "");
}

TEST_F(OpenStoreTest, LargerWorldWithoutAddressExplainsWhatToSet) {
  WorldInfo w;
  w.rank = 1;
  w.size = 2;
  try {
    open_store(w, Deadline::after(5s), 5s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    std::string m = e.what();
    EXPECT_NE(m.find("TUTTI_STORE"), std::string::npos) << m;
    EXPECT_NE(m.find("MASTER_ADDR"), std::string::npos) << m;
    EXPECT_NE(m.find("tuttirun"), std::string::npos) << m;
  }
}

TEST_F(OpenStoreTest, FileAddressGetsAFileStore) {
  testing::TempDir dir;
  WorldInfo w;
  w.size = 2;
  w.store_address = "file:" + dir.path();
  StoreConnection c = open_store(w, Deadline::after(5s), 5s);
  EXPECT_EQ(c.store->describe(), "file " + dir.path());
  c.store->set("k", "v");
  EXPECT_EQ(c.store->get("k", Deadline::after(1s)), "v");
}

TEST_F(OpenStoreTest, FileStoreDirectoryThatDoesNotExistIsRefusedNotCreated) {
  testing::TempDir dir;
  const std::string missing = dir.path() + "/not/there";
  WorldInfo w;
  w.size = 2;
  w.store_address = "file:" + missing;
  try {
    open_store(w, Deadline::after(5s), 5s);
    FAIL() << "opened a file store in a directory that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    std::string m = e.what();
    EXPECT_NE(m.find("'" + missing + "' does not exist"), std::string::npos) << m;
    EXPECT_NE(m.find("create it"), std::string::npos) << m;
    EXPECT_NE(m.find("shares"), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/not"));
}

// Keys an earlier job left in a reused directory are named as the problem, up front, instead of
// being read as this job's peers' addresses and shared-memory names.
TEST_F(OpenStoreTest, ReusedFileStoreDirectoryFailsNamingTheStaleKeys) {
  testing::TempDir dir;
  WorldInfo w;
  w.rank = 1;
  w.size = 2;
  w.job_id = "store-file_dir";
  w.store_address = "file:" + dir.path();
  { StoreConnection earlier_job = open_store(w, Deadline::after(5s), 5s); }
  try {
    open_store(w, Deadline::after(5s), 5s);
    FAIL() << "a reused file store directory was taken for a fresh one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    std::string m = e.what();
    EXPECT_NE(m.find("stale keys from an earlier job in " + dir.path()), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1"), std::string::npos) << m;
    EXPECT_NE(m.find("TUTTI_JOB_ID"), std::string::npos) << m;
  }
  // Another job id in the same directory is another job.
  w.job_id = "next-job";
  EXPECT_NO_THROW(open_store(w, Deadline::after(5s), 5s));
}

TEST_F(OpenStoreTest, RankZeroHostsTheTcpStoreAndOthersJoinIt) {
  uint16_t port = testing::free_port();
  WorldInfo r0;
  r0.size = 2;
  r0.store_address = "127.0.0.1:" + std::to_string(port);
  r0.host_store = true;
  r0.job_token = "t";
  WorldInfo r1 = r0;
  r1.rank = 1;
  r1.host_store = false;
  StoreConnection c0 = open_store(r0, Deadline::after(10s), 10s);
  StoreConnection c1 = open_store(r1, Deadline::after(10s), 10s);
  ASSERT_TRUE(c0.server);
  EXPECT_FALSE(c1.server);
  EXPECT_EQ(c0.server->port(), port);
  EXPECT_EQ(c0.local_address, "127.0.0.1");
  EXPECT_EQ(c1.local_address, "127.0.0.1");
  c0.store->set("from0", "a");
  EXPECT_EQ(c1.store->get("from0", Deadline::after(5s)), "a");
}

TEST_F(OpenStoreTest, MalformedAddressIsAConfigError) {
  WorldInfo w;
  w.size = 2;
  w.store_address = "no-port-here";
  try {
    open_store(w, Deadline::after(1s), 1s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("no-port-here"), std::string::npos);
  }
}

}  // namespace
}  // namespace tutti::bootstrap
