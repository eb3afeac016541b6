#include "kubexec/config.hpp"

#include <gtest/gtest.h>

#include <map>

#include "tutti/error.hpp"

namespace tutti::kubexec {
namespace {

EnvLookup lookup_in(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Config, DefaultsWhenNothingIsSet) {
  Config c = config_from_env(lookup_in({}));
  EXPECT_EQ(c.kubectl, "kubectl");
  EXPECT_EQ(c.name_space, "");
  EXPECT_EQ(c.container, "");
  EXPECT_EQ(c.retries, 5);
  EXPECT_DOUBLE_EQ(c.timeout_seconds, 60);
}

TEST(Config, ReadsEveryVariable) {
  Config c = config_from_env(lookup_in({{"KUBEXEC_KUBECTL", "/opt/kubectl"},
                                        {"KUBEXEC_NAMESPACE", "team-a"},
                                        {"KUBEXEC_CONTAINER", "mpi"},
                                        {"KUBEXEC_TIMEOUT", "2m"},
                                        {"KUBEXEC_RETRIES", "0"}}));
  EXPECT_EQ(c.kubectl, "/opt/kubectl");
  EXPECT_EQ(c.name_space, "team-a");
  EXPECT_EQ(c.container, "mpi");
  EXPECT_DOUBLE_EQ(c.timeout_seconds, 120);
  EXPECT_EQ(c.retries, 0);
}

struct BadVar {
  std::string name;
  std::string value;
};

class RejectsBadValue : public ::testing::TestWithParam<BadVar> {};

TEST_P(RejectsBadValue, NamingTheVariable) {
  try {
    config_from_env(lookup_in({{GetParam().name, GetParam().value}}));
    FAIL() << GetParam().name << "=" << GetParam().value << " accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find(GetParam().name), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Values, RejectsBadValue,
    ::testing::Values(BadVar{"KUBEXEC_NAMESPACE", "Team A"}, BadVar{"KUBEXEC_NAMESPACE", "a;b"},
                      BadVar{"KUBEXEC_CONTAINER", "-c"}, BadVar{"KUBEXEC_CONTAINER", "x\ny"},
                      BadVar{"KUBEXEC_TIMEOUT", "soon"}, BadVar{"KUBEXEC_TIMEOUT", "-1"},
                      BadVar{"KUBEXEC_TIMEOUT", "inf"}, BadVar{"KUBEXEC_RETRIES", "4294967297"},
                      BadVar{"KUBEXEC_RETRIES", "-1"}, BadVar{"KUBEXEC_RETRIES", "many"},
                      BadVar{"KUBEXEC_RETRIES", "3x"}, BadVar{"KUBEXEC_RETRIES", "1000000"}));

}  // namespace
}  // namespace tutti::kubexec
