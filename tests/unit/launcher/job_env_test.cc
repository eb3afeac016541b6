#include "launcher/job_env.hpp"

#include <gtest/gtest.h>

#include <set>

#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

TEST(Environment, KeepsOrderAndOverwrites) {
  Environment env = Environment::from_strings({"A=1", "B=x=y", "bogus", "=nameless", "A=2", "C="});
  EXPECT_EQ(env.to_strings(), (std::vector<std::string>{"A=2", "B=x=y", "C="}));
  env.erase("B");
  EXPECT_FALSE(env.get("B").has_value());
  EXPECT_EQ(env.get("C"), "");
}

TEST(Environment, FromProcessSeesPath) {
  ASSERT_EQ(::setenv("TUTTI_LAUNCHER_TEST_MARK", "here", 1), 0);
  Environment env = Environment::from_process();
  EXPECT_EQ(env.get("TUTTI_LAUNCHER_TEST_MARK"), "here");
  ::unsetenv("TUTTI_LAUNCHER_TEST_MARK");
}

TEST(Exports, ForwardSetAndUnset) {
  Environment from = Environment::from_strings({"HOME=/root", "EMPTY="});
  std::vector<std::string> unset;
  auto exports = resolve_exports({"HOME", "X=1", "MISSING", "EMPTY", "Y="}, from, &unset);
  ASSERT_EQ(exports.size(), 4u);
  EXPECT_EQ(exports[0].name, "HOME");
  EXPECT_EQ(exports[0].value, "/root");
  EXPECT_EQ(exports[1].name, "X");
  EXPECT_EQ(exports[1].value, "1");
  EXPECT_EQ(exports[2].name, "EMPTY");
  EXPECT_EQ(exports[3].name, "Y");
  EXPECT_EQ(exports[3].value, "");
  EXPECT_EQ(unset, std::vector<std::string>{"MISSING"});
  EXPECT_THROW(resolve_exports({"=x"}, from, nullptr), Error);
}

// -x TUTTI_RANK=7, -x RANK=5 and -x TUTTI_STORE=... used to be replaced without a word.
TEST(JobEnv, ExportsOfWhatTuttirunSetsAreRefusedSayingWhy) {
  const Environment from = Environment::from_strings({"TUTTI_RANK=3", "HOME=/root"});
  for (const char* arg : {"TUTTI_RANK=7", "TUTTI_RANK", "RANK=5", "TUTTI_STORE=file:/nonexistent",
                          "WORLD_SIZE=9", "TUTTI_JOB_ID=x"}) {
    try {
      resolve_exports({"HOME", arg}, from, nullptr);
      ADD_FAILURE() << arg << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig) << arg;
      EXPECT_NE(std::string(e.what()).find("tuttirun sets"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(resolve_exports({"TUTTI_TIMEOUT=5", "NCCL_HOSTID=a"}, from, nullptr).size(), 2u);
}

JobIdentity test_job() {
  JobIdentity job;
  job.job_id = "job7";
  job.job_token = "tok";
  job.store_address = "127.0.0.1:4242";
  return job;
}

class RankEnv : public ::testing::TestWithParam<int> {};

TEST_P(RankEnv, EveryTuttiVariable) {
  const int np = GetParam();
  JobPlan plan = plan_local(np);
  ASSERT_EQ(plan.world_size(), np);
  Environment base = Environment::from_strings({"PATH=/bin", "TUTTI_RANK=99", "TUTTI_TIMEOUT=7"});
  for (const RankSlot& slot : plan.slots) {
    Environment env = rank_environment(base, {{"USER_VAR", "u"}}, slot, np, test_job());
    EXPECT_EQ(env.get("PATH"), "/bin");
    EXPECT_EQ(env.get("USER_VAR"), "u");
    EXPECT_EQ(env.get("TUTTI_RANK"), std::to_string(slot.rank));
    EXPECT_EQ(env.get("TUTTI_SIZE"), std::to_string(np));
    EXPECT_EQ(env.get("TUTTI_LOCAL_RANK"), std::to_string(slot.rank));
    EXPECT_EQ(env.get("TUTTI_LOCAL_SIZE"), std::to_string(np));
    EXPECT_EQ(env.get("TUTTI_CROSS_RANK"), "0");
    EXPECT_EQ(env.get("TUTTI_CROSS_SIZE"), "1");
    EXPECT_EQ(env.get("TUTTI_STORE"), "127.0.0.1:4242");
    EXPECT_EQ(env.get("TUTTI_JOB_TOKEN"), "tok");
    EXPECT_EQ(env.get("TUTTI_JOB_ID"), "job7");
    EXPECT_EQ(env.get("TUTTI_LAUNCHER"), "tuttirun");
    EXPECT_EQ(env.get("TUTTI_RESTART_COUNT"), "0");
    EXPECT_EQ(env.get("TUTTI_TIMEOUT"), "7");  // inherited when --timeout is not given
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, RankEnv, ::testing::Values(1, 2, 3, 4, 7, 8));

TEST(RankEnvOverrides, LauncherValuesWinOverExports) {
  JobIdentity job = test_job();
  job.timeout = "30s";
  job.restart_count = 2;
  Environment env = rank_environment(Environment{}, {{"TUTTI_RANK", "5"}, {"TUTTI_TIMEOUT", "1"}},
                                     RankSlot{1, 1, 2, 0, 1, "localhost"}, 2, job);
  EXPECT_EQ(env.get("TUTTI_RANK"), "1");
  EXPECT_EQ(env.get("TUTTI_TIMEOUT"), "30s");
  EXPECT_EQ(env.get("TUTTI_RESTART_COUNT"), "2");
}

TEST(RandomHex, LengthAlphabetAndUniqueness) {
  std::set<std::string> seen;
  for (size_t len : {1u, 7u, 12u, 32u, 64u}) {
    std::string s = random_hex(len);
    EXPECT_EQ(s.size(), len);
    EXPECT_EQ(s.find_first_not_of("0123456789abcdef"), std::string::npos) << s;
    seen.insert(random_hex(32));
  }
  EXPECT_EQ(seen.size(), 5u);
}

TEST(JobIdentity, TokenAndIdChoices) {
  JobIdentity fresh = make_job_identity(std::nullopt, "", "h:1", std::nullopt);
  EXPECT_EQ(fresh.job_token.size(), 32u);
  EXPECT_TRUE(fresh.job_id.starts_with("tuttirun-")) << fresh.job_id;
  EXPECT_GT(fresh.job_id.size(), std::string("tuttirun-").size());
  EXPECT_EQ(fresh.store_address, "h:1");
  EXPECT_EQ(fresh.restart_count, 0);

  JobIdentity given = make_job_identity(std::string("secret"), "mine", "h:1", std::string("9"));
  EXPECT_EQ(given.job_token, "secret");
  EXPECT_EQ(given.job_id, "mine");
  EXPECT_EQ(given.timeout, "9");

  EXPECT_NE(make_job_identity(std::nullopt, "", "", std::nullopt).job_token,
            make_job_identity(std::nullopt, "", "", std::nullopt).job_token);
}

}  // namespace
}  // namespace tutti::launcher
