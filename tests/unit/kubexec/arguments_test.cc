#include "kubexec/arguments.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tutti::kubexec {
namespace {

using Args = std::vector<std::string>;

struct SkipCase {
  Args args;
  std::string host;
  Args command;
};

class SkipsLeadingOptions : public ::testing::TestWithParam<SkipCase> {};

TEST_P(SkipsLeadingOptions, FindsHostAndCommand) {
  ArgsResult r = parse_arguments(GetParam().args);
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.invocation->host, GetParam().host);
  EXPECT_EQ(r.invocation->command, GetParam().command);
}

INSTANTIATE_TEST_SUITE_P(
    Callers, SkipsLeadingOptions,
    ::testing::Values(
        // Open MPI's plm_rsh_agent: host first, then orted's argv with quoted values.
        SkipCase{
            {"w-0", "orted", "-mca", "ess", "\"env\""}, "w-0", {"orted", "-mca", "ess", "\"env\""}},
        // Hydra: ssh-style flags before the host.
        SkipCase{{"-x", "w-1", "/usr/bin/hydra_pmi_proxy", "--control-port", "x:1"},
                 "w-1",
                 {"/usr/bin/hydra_pmi_proxy", "--control-port", "x:1"}},
        SkipCase{{"-p", "22", "w-0", "true"}, "w-0", {"true"}},
        SkipCase{{"-p22", "w-0", "true"}, "w-0", {"true"}},
        SkipCase{{"-xTp", "22", "w-0", "true"}, "w-0", {"true"}},
        SkipCase{{"-o", "BatchMode=yes", "-oConnectTimeout=5", "w-0", "true"}, "w-0", {"true"}},
        SkipCase{{"-l", "root", "-i", "/k", "-F", "/c", "-E", "/l", "-J", "j", "w-0", "true"},
                 "w-0",
                 {"true"}},
        SkipCase{{"-4", "-n", "-q", "-T", "-v", "w-0", "true"}, "w-0", {"true"}},
        // After the host everything is the command, options included.
        SkipCase{{"w-0", "-x", "-p", "22"}, "w-0", {"-x", "-p", "22"}},
        SkipCase{{"--", "w-0", "true"}, "w-0", {"true"}},
        SkipCase{{"--namespace", "ns", "--container=mpi", "w-0", "true"}, "w-0", {"true"}}));

TEST(Arguments, LongOptionsOverrideEnvironment) {
  ArgsResult r = parse_arguments(
      Args{"--namespace=ns", "--container", "mpi", "--kubectl", "/opt/kubectl", "w-0", "true"});
  ASSERT_TRUE(r.should_run()) << r.message;
  EXPECT_EQ(r.invocation->name_space, "ns");
  EXPECT_EQ(r.invocation->container, "mpi");
  EXPECT_EQ(r.invocation->kubectl, "/opt/kubectl");
}

class UsageErrors : public ::testing::TestWithParam<Args> {};

TEST_P(UsageErrors, ExitWith255AndSaySo) {
  ArgsResult r = parse_arguments(GetParam());
  EXPECT_FALSE(r.should_run());
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.message.find("kubexec: "), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Bad, UsageErrors,
                         ::testing::Values(Args{}, Args{"w-0"}, Args{"-x"}, Args{"-p"},
                                           Args{"-p", "22"}, Args{"--bogus", "w-0", "true"},
                                           Args{"--namespace"}, Args{"--", "w-0"}));

TEST(Arguments, HelpListsEnvironmentAndExitCodes) {
  ArgsResult r = parse_arguments(Args{"--help"});
  EXPECT_FALSE(r.should_run());
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"KUBEXEC_KUBECTL", "KUBEXEC_NAMESPACE", "KUBEXEC_CONTAINER",
                           "KUBEXEC_TIMEOUT", "KUBEXEC_RETRIES", "Exit status", "255", "127"})
    EXPECT_NE(r.message.find(word), std::string::npos) << word;
}

TEST(Arguments, KnowsWhichSshOptionsTakeAValue) {
  for (char c : std::string("pFoliEJLRDbcemwWSQOBI")) EXPECT_TRUE(ssh_option_takes_value(c)) << c;
  for (char c : std::string("xXTtnqvN46AaCfgGkKMsVyY"))
    EXPECT_FALSE(ssh_option_takes_value(c)) << c;
}

}  // namespace
}  // namespace tutti::kubexec
