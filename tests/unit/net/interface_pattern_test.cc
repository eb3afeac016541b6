#include "net/interface_pattern.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"

namespace tutti::net {
namespace {

struct SelectCase {
  std::string pattern;
  std::vector<std::string> selected;
  std::vector<std::string> not_selected;
};

class PatternSelects : public ::testing::TestWithParam<SelectCase> {};

TEST_P(PatternSelects, TheNamesItShould) {
  const SelectCase& c = GetParam();
  InterfacePattern p = parse_interface_pattern(c.pattern, "TUTTI_SOCKET_IFNAME");
  for (const std::string& name : c.selected)
    EXPECT_TRUE(p.selects(name)) << c.pattern << " " << name;
  for (const std::string& name : c.not_selected)
    EXPECT_FALSE(p.selects(name)) << c.pattern << " " << name;
}

INSTANTIATE_TEST_SUITE_P(
    Syntax, PatternSelects,
    ::testing::Values(SelectCase{"eth0", {"eth0", "eth01", "eth0.100"}, {"eth1", "eth", "data0"}},
                      SelectCase{"eth,ib", {"eth0", "eth1", "ib0", "ibp1s0"}, {"lo", "data0"}},
                      SelectCase{"^docker,lo", {"eth0", "data0", "ib0"}, {"docker0", "lo", "lo1"}},
                      SelectCase{"=eth0", {"eth0"}, {"eth01", "eth", "eth1"}},
                      SelectCase{"^=lo", {"lo0", "eth0", "loop"}, {"lo"}},
                      SelectCase{"=eth0,data0", {"eth0", "data0"}, {"data01", "eth01"}},
                      SelectCase{"eth,,ib,", {"eth0", "ib0"}, {"lo"}}));

TEST(InterfacePattern, ParsesFlagsAndNames) {
  InterfacePattern p = parse_interface_pattern("^=docker0,lo", "TUTTI_SOCKET_IFNAME");
  EXPECT_TRUE(p.exclude);
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.names, (std::vector<std::string>{"docker0", "lo"}));
  EXPECT_EQ(p.to_string(), "^=docker0,lo");
  InterfacePattern q = parse_interface_pattern("eth", "TUTTI_SOCKET_IFNAME");
  EXPECT_FALSE(q.exclude);
  EXPECT_FALSE(q.exact);
  EXPECT_EQ(q.to_string(), "eth");
}

// '=' before '^' is not the syntax: it is an exact name starting with '^', which no interface has.
TEST(InterfacePattern, CaretComesFirst) {
  InterfacePattern p = parse_interface_pattern("=^eth0", "TUTTI_SOCKET_IFNAME");
  EXPECT_FALSE(p.exclude);
  EXPECT_TRUE(p.exact);
  EXPECT_FALSE(p.selects("eth0"));
}

class PatternWithoutNames : public ::testing::TestWithParam<std::string> {};

TEST_P(PatternWithoutNames, IsAConfigErrorNamingTheSetting) {
  try {
    parse_interface_pattern(GetParam(), "TUTTI_SOCKET_IFNAME");
    FAIL() << "accepted '" << GetParam() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("TUTTI_SOCKET_IFNAME"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Empty, PatternWithoutNames,
                         ::testing::Values("", "^", "=", "^=", ",", "^,,", "=,"));

}  // namespace
}  // namespace tutti::net
