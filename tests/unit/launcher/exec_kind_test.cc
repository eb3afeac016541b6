// The exec kinds' names and what tuttirun advises when hosts never answered the probe: each kind
// names only the settings that can fix that kind (KUBEXEC_* for kubexec alone).
#include "launcher/exec_kind.hpp"

#include <gtest/gtest.h>

namespace tutti::launcher {
namespace {

TEST(ExecKind, NamesAreTheExecSpellings) {
  EXPECT_EQ(exec_name(ExecKind::kLocal), "local");
  EXPECT_EQ(exec_name(ExecKind::kSsh), "ssh");
  EXPECT_EQ(exec_name(ExecKind::kKubexec), "kubexec");
  for (ExecKind kind : kExecKinds) EXPECT_EQ(parse_exec_kind(exec_name(kind)), kind);
  EXPECT_EQ(parse_exec_kind("rsh"), std::nullopt);
  EXPECT_EQ(parse_exec_kind("SSH"), std::nullopt);  // --exec takes the lower-case names only
  EXPECT_EQ(parse_exec_kind(""), std::nullopt);
}

TEST(UnreachableAdvice, KubexecNamesThePodsAndItsSettings) {
  std::string advice = unreachable_hosts_advice(ExecKind::kKubexec);
  EXPECT_NE(advice.find("kubectl get pods"), std::string::npos) << advice;
  EXPECT_NE(advice.find("KUBEXEC_NAMESPACE"), std::string::npos) << advice;
  EXPECT_NE(advice.find("KUBEXEC_CONTAINER"), std::string::npos) << advice;
  EXPECT_NE(advice.find("--probe-timeout"), std::string::npos) << advice;
}

TEST(UnreachableAdvice, SshNamesSshNotKubexec) {
  std::string advice = unreachable_hosts_advice(ExecKind::kSsh);
  EXPECT_EQ(advice.find("KUBEXEC"), std::string::npos) << advice;
  EXPECT_EQ(advice.find("kubectl"), std::string::npos) << advice;
  EXPECT_EQ(advice.find("pods"), std::string::npos) << advice;
  EXPECT_NE(advice.find("BatchMode"), std::string::npos) << advice;
  EXPECT_NE(advice.find("--ssh PROGRAM"), std::string::npos) << advice;
  EXPECT_NE(advice.find("--probe-timeout"), std::string::npos) << advice;
}

TEST(UnreachableAdvice, LocalHasNone) {
  EXPECT_EQ(unreachable_hosts_advice(ExecKind::kLocal), "");
}

}  // namespace
}  // namespace tutti::launcher
