#include "hostfile/cli.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tutti::hostfile {
namespace {

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun run_tool(std::vector<std::string> args, const std::string& input = "") {
  std::istringstream in(input);
  std::ostringstream out, err;
  int code = run_cli(args, in, out, err);
  return {code, out.str(), err.str()};
}

TEST(Cli, JobWithNamespace) {
  CliRun r = run_tool({"--job", "train", "--workers", "2", "--slots", "4", "--namespace", "ml"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "train-worker-0.train.ml.svc slots=4\ntrain-worker-1.train.ml.svc slots=4\n");
}

TEST(Cli, PodsWithDomainInMpichFormat) {
  CliRun r = run_tool({"--pods", "a,b", "--domain", "svc.example", "--format", "mpich"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "a.svc.example:1\nb.svc.example:1\n");
}

TEST(Cli, PodsFileFromStdin) {
  CliRun r = run_tool({"--pods-file", "-", "--format", "intel", "--slots", "2"}, "pod/x\npod/y\n");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "x:2\ny:2\n");
}

TEST(Cli, ConvertsAHostfile) {
  CliRun r = run_tool({"--hostfile", "-", "--format", "plain"}, "a slots=2\nb:3\n");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "a\nb\n");
}

TEST(Cli, WritesOutputFile) {
  auto path =
      std::filesystem::temp_directory_path() / ("hostfile-cli-" + std::to_string(::getpid()));
  CliRun r = run_tool({"--pods", "a", "-o", path.string()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "");
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "a slots=1");
  std::filesystem::remove(path);
  CliRun bad = run_tool({"--pods", "a", "-o", "/nonexistent-dir/x/hostfile"});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_NE(bad.err.find("/nonexistent-dir/x/hostfile"), std::string::npos);
}

TEST(Cli, HelpAndVersion) {
  CliRun h = run_tool({"--help"});
  EXPECT_EQ(h.code, kExitOk);
  EXPECT_NE(h.out.find("Exit codes"), std::string::npos);
  CliRun v = run_tool({"--version"});
  EXPECT_EQ(v.code, kExitOk);
  EXPECT_NE(v.out.find("tutti-hostfile (tutti)"), std::string::npos);
}

struct UsageCase {
  std::vector<std::string> args;
  std::string fragment;
};
class CliUsage : public ::testing::TestWithParam<UsageCase> {};
TEST_P(CliUsage, ExitsTwoWithMessage) {
  CliRun r = run_tool(GetParam().args);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(GetParam().fragment), std::string::npos) << r.err;
}
INSTANTIATE_TEST_SUITE_P(
    Bad, CliUsage,
    ::testing::Values(
        UsageCase{{}, "exactly one of"}, UsageCase{{"--pods", "a", "--job", "j"}, "exactly one of"},
        UsageCase{{"--job", "j"}, "--job needs --workers"},
        UsageCase{{"--pods", "a", "--workers", "2"}, "--workers goes with --job"},
        UsageCase{{"--pods", "a", "--namespace", "n"}, "--namespace goes with --job"},
        UsageCase{{"--job", "j", "--workers", "1", "--namespace", "n", "--domain", "d"},
                  "not both"},
        UsageCase{{"--hostfile", "-", "--slots", "2"}, "do not apply"},
        UsageCase{{"--pods", "a", "--format", "slurm"}, "slurm"},
        UsageCase{{"--pods", "a", "--slots", "x"}, "--slots"},
        UsageCase{{"--pods", "a", "--bogus"}, "--bogus"}, UsageCase{{"--pods", "a,a b"}, "a space"},
        UsageCase{{"--pods", "ok,$(id)"}, "'$'"},
        UsageCase{{"--pods", "a", "--slots", "0"}, "--slots 0"},
        UsageCase{{"--job", "Job", "--workers", "2"}, "job name 'Job'"}));

TEST(Cli, BadFilesExitOne) {
  CliRun r = run_tool({"--hostfile", "-"}, "a slots=1\na slots=2\n");
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("<stdin>:2: host a is listed again"), std::string::npos) << r.err;
  CliRun p = run_tool({"--pods-file", "-"}, "a\nb;c\n");
  EXPECT_EQ(p.code, kExitBadInput);
  EXPECT_NE(p.err.find("<stdin>:2:"), std::string::npos) << p.err;
  CliRun missing = run_tool({"--hostfile", "/nonexistent/hostfile"});
  EXPECT_EQ(missing.code, kExitBadInput);
}

}  // namespace
}  // namespace tutti::hostfile
