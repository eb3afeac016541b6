#include "hostfile/dns_name.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tutti::hostfile {
namespace {

class ValidLabel : public ::testing::TestWithParam<std::string> {};
TEST_P(ValidLabel, Accepted) {
  EXPECT_EQ(label_problem(GetParam()), "");
  EXPECT_EQ(subdomain_problem(GetParam()), "");
}
INSTANTIATE_TEST_SUITE_P(Names, ValidLabel,
                         ::testing::Values("a", "0", "job-worker-0", "a1-b2", std::string(63, 'x'),
                                           "123"));

struct Bad {
  std::string name;
  std::string reason;  // a fragment the message must contain
};
class InvalidLabel : public ::testing::TestWithParam<Bad> {};
TEST_P(InvalidLabel, RejectedWithReason) {
  std::string problem = label_problem(GetParam().name);
  EXPECT_NE(problem.find(GetParam().reason), std::string::npos) << problem;
}
INSTANTIATE_TEST_SUITE_P(
    Names, InvalidLabel,
    ::testing::Values(Bad{"", "empty"}, Bad{"Job", "uppercase letter 'J'"}, Bad{"a b", "a space"},
                      Bad{"a\nb", "a newline"}, Bad{"a;rm", "';'"}, Bad{"$(id)", "'$'"},
                      Bad{"a`b`", "'`'"}, Bad{"a'b", "'''"}, Bad{"a|b", "'|'"},
                      Bad{"-x", "start and end"}, Bad{"x-", "start and end"}, Bad{"a.b", "'.'"},
                      Bad{"a_b", "'_'"}, Bad{std::string(64, 'x'), "64 characters"},
                      Bad{std::string("a\0b", 3), "\\x00"}, Bad{"caf\xc3\xa9", "\\xc3"}));

TEST(Subdomain, AcceptsDottedNames) {
  EXPECT_EQ(subdomain_problem("job-worker-0.job.ns.svc.cluster.local"), "");
  EXPECT_EQ(subdomain_problem("10.0.0.1"), "");
}

TEST(Subdomain, RejectsEmptyLabelsAndLength) {
  EXPECT_NE(subdomain_problem("a..b").find("empty label"), std::string::npos);
  EXPECT_NE(subdomain_problem(".a").find("empty label"), std::string::npos);
  EXPECT_NE(subdomain_problem("a.").find("empty label"), std::string::npos);
  EXPECT_NE(subdomain_problem("a.B").find("label 'B'"), std::string::npos);
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  long_name += "d";
  EXPECT_NE(subdomain_problem(long_name).find("at most 253"), std::string::npos);
}

TEST(Printable, EscapesControlBytesAndTruncates) {
  EXPECT_EQ(printable("ok-name"), "ok-name");
  EXPECT_EQ(printable("a\nb\x1b[2J"), "a\\x0ab\\x1b[2J");
  EXPECT_EQ(printable("a\\b"), "a\\x5cb");
  std::string p = printable(std::string(500, 'y'));
  EXPECT_LT(p.size(), 100u);
  EXPECT_TRUE(p.ends_with("..."));
}

}  // namespace
}  // namespace tutti::hostfile
