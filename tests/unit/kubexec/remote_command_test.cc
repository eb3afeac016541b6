#include "kubexec/remote_command.hpp"

#include <gtest/gtest.h>

namespace tutti::kubexec {
namespace {

using Args = std::vector<std::string>;

TEST(JoinCommand, JoinsWithSingleSpacesLikeSsh) {
  EXPECT_EQ(join_command(Args{"orted", "-mca", "ess", "\"env\""}), "orted -mca ess \"env\"");
  EXPECT_EQ(join_command(Args{"echo"}), "echo");
  EXPECT_EQ(join_command(Args{"a b", "c"}), "a b c");
  EXPECT_EQ(join_command(Args{"x", "", "y"}), "x  y");
}

TEST(JoinCommand, LeavesHostileTextUntouched) {
  for (std::string word : {"$(id)", "`id`", "a;b", "line\nbreak", "'q'", "\"q\"", "\\"}) {
    EXPECT_EQ(join_command(Args{"echo", word}), "echo " + word);
  }
}

TEST(KubectlArgv, MinimalShape) {
  Config config;
  EXPECT_EQ(kubectl_argv(config, "w-0", "echo hi"),
            (Args{"kubectl", "exec", "-i", "w-0", "--", "/bin/sh", "-c", "echo hi"}));
}

TEST(KubectlArgv, NamespaceAndContainer) {
  Config config;
  config.kubectl = "/opt/bin/kubectl";
  config.name_space = "team-a";
  config.container = "mpi";
  EXPECT_EQ(kubectl_argv(config, "w-0", "true"),
            (Args{"/opt/bin/kubectl", "exec", "-i", "w-0", "-n", "team-a", "-c", "mpi", "--",
                  "/bin/sh", "-c", "true"}));
}

TEST(KubectlArgv, CommandIsOneElementEvenWithNewlines) {
  Args argv = kubectl_argv(Config{}, "w-0", "a\nb; c");
  EXPECT_EQ(argv.back(), "a\nb; c");
  EXPECT_EQ(argv.size(), 8u);
}

}  // namespace
}  // namespace tutti::kubexec
