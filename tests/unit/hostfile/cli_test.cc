#include "hostfile/cli.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
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

// -o onto what is not a regular file: written into, never replaced (as root, a rename once
// replaced /dev/full with a regular file).
TEST(Cli, OutputOntoDevicesFifosAndSymlinks) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("hostfile-cli-o-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  CliRun full = run_tool({"--pods", "a", "-o", "/dev/full"});
  EXPECT_EQ(full.code, kExitBadInput);
  EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/full"));

  CliRun null = run_tool({"--pods", "a", "-o", "/dev/null"});
  EXPECT_EQ(null.code, kExitOk) << null.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));

  // A fifo without a reader: an error, not a hang; with one, the reader gets the hostfile.
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliRun unread = run_tool({"--pods", "a", "-o", fifo.string()});
  EXPECT_EQ(unread.code, kExitBadInput);
  EXPECT_NE(unread.err.find("no process reads"), std::string::npos) << unread.err;
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  CliRun piped = run_tool({"--pods", "a", "-o", fifo.string()});
  EXPECT_EQ(piped.code, kExitOk) << piped.err;
  char buf[64] = {};
  EXPECT_EQ(::read(reader, buf, sizeof buf - 1), 10);
  EXPECT_STREQ(buf, "a slots=1\n");
  ::close(reader);
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));

  // A symlink stays a link; the file it points at gets the hostfile.
  const auto real = dir / "real", link = dir / "link";
  std::filesystem::create_symlink(real, link);
  CliRun linked = run_tool({"--pods", "b", "-o", link.string()});
  EXPECT_EQ(linked.code, kExitOk) << linked.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  std::ifstream in(real);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "b slots=1");

  CliRun onto_dir = run_tool({"--pods", "a", "-o", dir.string()});
  EXPECT_EQ(onto_dir.code, kExitBadInput);
  EXPECT_NE(onto_dir.err.find("is a directory"), std::string::npos) << onto_dir.err;
  std::filesystem::remove_all(dir);
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
