// End-to-end: the kubexec binary against a stand-in kubectl (fake_kubectl.sh) that records its
// argv and runs the command locally with sh -c, as the pod would.
#include <gtest/gtest.h>

#include <boost/process.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace bp = boost::process;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class KubexecCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kubexec_e2e_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    env_["KUBEXEC_KUBECTL"] = FAKE_KUBECTL;
    env_["FAKE_KUBECTL_LOG"] = (dir_ / "argv").string();
    env_["FAKE_KUBECTL_CALLS"] = (dir_ / "calls").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Outcome run(const std::vector<std::string>& args, const std::string& input = "") {
    std::ofstream(dir_ / "stdin", std::ios::binary) << input;
    bp::environment env = boost::this_process::environment();
    for (const auto& [k, v] : env_) env[k] = v;
    bp::child child(bp::exe = KUBEXEC_BIN, bp::args = args, env,
                    bp::std_in<(dir_ / "stdin").string(), bp::std_out>(dir_ / "out").string(),
                    bp::std_err > (dir_ / "err").string());
    child.wait();
    return Outcome{child.exit_code(), slurp(dir_ / "out"), slurp(dir_ / "err")};
  }

  std::vector<std::string> kubectl_argv() {
    std::vector<std::string> argv;
    std::string all = slurp(dir_ / "argv");
    for (size_t start = 0; start < all.size();) {
      size_t end = all.find('\0', start);
      argv.push_back(all.substr(start, end - start));
      start = end + 1;
    }
    return argv;
  }

  int calls() {
    std::string text = slurp(dir_ / "calls");
    return text.empty() ? 0 : std::stoi(text);
  }

  fs::path dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(KubexecCli, RunsKubectlExecWithNamespaceContainerAndOneShellString) {
  env_["KUBEXEC_NAMESPACE"] = "team-a";
  env_["KUBEXEC_CONTAINER"] = "mpi";
  Outcome o = run({"job-worker-0", "echo", "hello", "world"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "hello world\n");
  EXPECT_EQ(kubectl_argv(),
            (std::vector<std::string>{"exec", "-i", "job-worker-0", "-n", "team-a", "-c", "mpi",
                                      "--", "/bin/sh", "-c", "echo hello world"}));
}

TEST_F(KubexecCli, OpenMpiStyleQuotedValuesMeanWhatTheyMeanOverSsh) {
  // Open MPI's rsh launcher passes values wrapped in literal quotes; the remote shell removes them.
  Outcome o = run({"job-worker-0", "printf", "'%s\\n'", "-mca", "ess", "\"env\"", "-mca",
                   "orte_hnp_uri", "\"1234.0;tcp://10.0.0.1:4000\""});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "-mca\ness\nenv\n-mca\norte_hnp_uri\n1234.0;tcp://10.0.0.1:4000\n");
}

class HostileCommand : public KubexecCli, public ::testing::WithParamInterface<std::string> {};

TEST_P(HostileCommand, ReachesKubectlAsOneUnchangedArgument) {
  // kubexec itself never interprets the command: the joined string is one argv element.
  fs::path marker = dir_ / "local-marker";
  std::string word = GetParam();
  Outcome o = run({"job-worker-0", "true", "'" + word + "'"});
  std::vector<std::string> argv = kubectl_argv();
  ASSERT_FALSE(argv.empty()) << o.err;
  EXPECT_EQ(argv.back(), "true '" + word + "'");
  EXPECT_EQ(argv[argv.size() - 2], "-c");
}

INSTANTIATE_TEST_SUITE_P(Words, HostileCommand,
                         ::testing::Values("$(touch /tmp/x)", "a; rm -rf /", "line1\nline2",
                                           "double \" quote", "`id`", "a && b | c > d", "tab\there",
                                           "*?[glob]"));

TEST_F(KubexecCli, SingleQuotedSubstitutionIsNotRun) {
  fs::path marker = dir_ / "marker";
  Outcome o = run({"job-worker-0", "echo", "'$(touch " + marker.string() + ")'"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "$(touch " + marker.string() + ")\n");
  EXPECT_FALSE(fs::exists(marker));
}

class HostilePod : public KubexecCli, public ::testing::WithParamInterface<std::string> {};

TEST_P(HostilePod, IsRefusedBeforeKubectlRuns) {
  Outcome o = run({GetParam(), "true"});
  EXPECT_EQ(o.exit_code, 255);
  EXPECT_NE(o.err.find("kubexec:"), std::string::npos) << o.err;
  EXPECT_EQ(calls(), 0);
}

INSTANTIATE_TEST_SUITE_P(Names, HostilePod,
                         ::testing::Values("job;rm -rf /", "job worker", "job\nworker",
                                           "Job-Worker-0", "$(id)", "`id`", "a|b", "a&b", "",
                                           "job-worker-0.svc;id", "-worker", "..", "pod/x",
                                           std::string(64, 'a')));

TEST_F(KubexecCli, ForwardsTheRemoteExitStatus) {
  for (int status : {0, 1, 7, 42, 254}) {
    Outcome o = run({"job-worker-0", "exit", std::to_string(status)});
    EXPECT_EQ(o.exit_code, status) << o.err;
  }
}

TEST_F(KubexecCli, ReportsADeathBySignalAs128PlusSignal) {
  Outcome o = run({"job-worker-0", "kill", "-9", "$$"});
  EXPECT_EQ(o.exit_code, 128 + 9) << o.err;
}

TEST_F(KubexecCli, ForwardsStdinAndStderr) {
  Outcome o = run({"job-worker-0", "cat;", "echo", "oops", ">&2"}, "line 1\nline 2\n");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "line 1\nline 2\n");
  EXPECT_EQ(o.err, "oops\n");
}

TEST_F(KubexecCli, RetriesTransientFailuresThenSucceeds) {
  env_["FAKE_KUBECTL_FAIL_TIMES"] = "2";
  env_["KUBEXEC_RETRIES"] = "5";
  Outcome o = run({"job-worker-0", "echo", "ran"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "ran\n");
  EXPECT_EQ(calls(), 3);
  EXPECT_NE(o.err.find("retry 2/5"), std::string::npos) << o.err;
}

TEST_F(KubexecCli, GivesUpAfterKubexecRetries) {
  env_["FAKE_KUBECTL_FAIL_TIMES"] = "100";
  env_["KUBEXEC_RETRIES"] = "2";
  Outcome o = run({"job-worker-0", "echo", "ran"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(calls(), 3);
  EXPECT_NE(o.err.find("KUBEXEC_RETRIES reached"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("unable to upgrade connection"), std::string::npos) << o.err;
}

TEST_F(KubexecCli, StopsRetryingAtTheDeadline) {
  env_["FAKE_KUBECTL_FAIL_TIMES"] = "1000";
  env_["KUBEXEC_RETRIES"] = "1000";
  env_["KUBEXEC_TIMEOUT"] = "1500ms";
  Outcome o = run({"job-worker-0", "echo", "ran"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("KUBEXEC_TIMEOUT passed"), std::string::npos) << o.err;
  // Backoff starts at 250ms and doubles, so a 1.5s budget allows only a handful of attempts.
  EXPECT_GE(calls(), 2);
  EXPECT_LE(calls(), 6);
}

TEST_F(KubexecCli, DoesNotRetryAMissingPod) {
  Outcome o = run({"job-worker-9", "echo", "ran"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(calls(), 1);
  EXPECT_NE(o.err.find("pods \"job-worker-9\" not found"), std::string::npos) << o.err;
}

TEST_F(KubexecCli, DoesNotRetryOnceTheRemoteCommandHasSpoken) {
  Outcome o = run({"job-worker-0", "echo", "started;",
                   "echo 'error: unable to upgrade connection' >&2;", "exit", "1"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.out, "started\n");
  EXPECT_EQ(calls(), 1);
  EXPECT_EQ(o.err, "error: unable to upgrade connection\n");
}

TEST_F(KubexecCli, StripsTheDomainToThePodName) {
  Outcome o = run({"job-worker-1.job.default.svc.cluster.local", "echo", "ok"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::vector<std::string> argv = kubectl_argv();
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[2], "job-worker-1");
}

class LeadingOptions : public KubexecCli,
                       public ::testing::WithParamInterface<std::vector<std::string>> {};

TEST_P(LeadingOptions, AreSkippedBeforeTheHost) {
  std::vector<std::string> args = GetParam();
  args.insert(args.end(), {"job-worker-0", "echo", "ok"});
  Outcome o = run(args);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "ok\n");
  EXPECT_EQ(kubectl_argv().at(2), "job-worker-0");
}

INSTANTIATE_TEST_SUITE_P(
    SshStyle, LeadingOptions,
    ::testing::Values(std::vector<std::string>{"-x"},
                      std::vector<std::string>{"-x", "-p", "22", "-o", "BatchMode=yes"},
                      std::vector<std::string>{"-qp22", "-T"},
                      std::vector<std::string>{"-l", "root", "-i", "/key", "-F", "/cfg", "-E",
                                               "/log"},
                      std::vector<std::string>{"-o", "StrictHostKeyChecking=no", "--"}));

TEST_F(KubexecCli, MissingKubectlExits127) {
  env_["KUBEXEC_KUBECTL"] = (dir_ / "no-such-kubectl").string();
  Outcome o = run({"job-worker-0", "true"});
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_NE(o.err.find("KUBEXEC_KUBECTL"), std::string::npos) << o.err;
}

TEST_F(KubexecCli, BadEnvironmentIsAUsageError) {
  env_["KUBEXEC_NAMESPACE"] = "bad ns";
  Outcome o = run({"job-worker-0", "true"});
  EXPECT_EQ(o.exit_code, 255);
  EXPECT_NE(o.err.find("KUBEXEC_NAMESPACE"), std::string::npos) << o.err;
  EXPECT_EQ(calls(), 0);
}

TEST_F(KubexecCli, HelpDocumentsExitCodes) {
  Outcome o = run({"--help"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("Exit status"), std::string::npos);
  EXPECT_NE(o.out.find("KUBEXEC_RETRIES"), std::string::npos);
}

}  // namespace
