#include "hostfile/parse.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tutti/error.hpp"

namespace tutti::hostfile {
namespace {

Hostfile parse_ok(std::string_view text) {
  return parse(text, "hf");
}

// The message of the kConfig error parse throws; fails the test if it does not throw one.
std::string parse_error(std::string_view text) {
  try {
    parse(text, "hf");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    return e.what();
  }
  ADD_FAILURE() << "parse accepted: " << text;
  return {};
}

TEST(Parse, OpenMpiFormat) {
  Hostfile h = parse_ok("a slots=2\nb slots=3 max_slots=5\nc max-slots=1\n");
  ASSERT_EQ(h.hosts.size(), 3u);
  EXPECT_EQ(h.hosts[0], (Host{"a", 2, std::nullopt}));
  EXPECT_EQ(h.hosts[1], (Host{"b", 3, 5}));
  EXPECT_EQ(h.hosts[2], (Host{"c", 1, 1}));
  EXPECT_EQ(h.total_slots(), 6);
}

TEST(Parse, MpichAndPlainFormatsAndMixes) {
  Hostfile h = parse_ok("job-worker-0:4\njob-worker-1\njob-worker-2 slots=2");
  ASSERT_EQ(h.hosts.size(), 3u);
  EXPECT_EQ(h.hosts[0].slots, 4);
  EXPECT_EQ(h.hosts[1].slots, 1);
  EXPECT_EQ(h.hosts[2].slots, 2);
}

TEST(Parse, CommentsBlanksCrlfAndSpacesAroundEquals) {
  Hostfile h = parse_ok(
      "# generated\n\n   \n\tw-0.job.ns.svc.cluster.local   slots = 2 # trailing\r\n"
      "w-1.job.ns.svc slots= 3 max_slots =4\r\n#end");
  ASSERT_EQ(h.hosts.size(), 2u);
  EXPECT_EQ(h.hosts[0], (Host{"w-0.job.ns.svc.cluster.local", 2, std::nullopt}));
  EXPECT_EQ(h.hosts[1], (Host{"w-1.job.ns.svc", 3, 4}));
}

struct BadCase {
  std::string text;
  std::string fragment;  // the message must contain it
};
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << ::testing::PrintToString(c.text);
}
class ParseRejects : public ::testing::TestWithParam<BadCase> {};
TEST_P(ParseRejects, WithLineAndReason) {
  std::string message = parse_error(GetParam().text);
  EXPECT_NE(message.find(GetParam().fragment), std::string::npos) << message;
}
INSTANTIATE_TEST_SUITE_P(
    Hostile, ParseRejects,
    ::testing::Values(
        BadCase{"", "hf: no hosts"}, BadCase{"# only\n\n  # comments\n", "hf: no hosts"},
        BadCase{"a\nB slots=1\n", "hf:2: host 'B' is not a valid"},
        BadCase{"a slots=0", "hf:1: slots=0 must be at least 1"},
        BadCase{"a slots=-3", "slots=-3 must be at least 1"},
        BadCase{"a:0", "hf:1: slots=0 must be at least 1"},
        BadCase{"a slots=x", "slots 'x' is not a whole number"},
        BadCase{"a slots=", "slots '' is not a whole number"},
        BadCase{"a slots=2x", "slots '2x' is not a whole number"},
        BadCase{"a slots=99999999999999999999", "is not a whole number"},
        BadCase{"a slots=2000000", "is more than"},
        BadCase{"a\n\n#x\na slots=2", "hf:4: host a is listed again (first on line 1)"},
        BadCase{"a cpus=2", "hf:1: unknown key 'cpus'"},
        BadCase{"a slots=1 slots=2", "slots given twice"},
        BadCase{"a:2 slots=2", "slots given twice"},
        BadCase{"a max_slots=1 max_slots=2", "max_slots given twice"},
        BadCase{"a slots=3 max_slots=2", "max_slots=2 below slots=3"},
        BadCase{"a max_slots=0", "max_slots=0 must be at least 1"},
        BadCase{"a b", "unexpected 'b' after host a"}, BadCase{"a:2:eth0", "only host:N"},
        BadCase{"a;reboot slots=1", "contains ';'"}, BadCase{"$(id)", "contains '$'"},
        BadCase{"`id`", "contains '`'"}, BadCase{"'a'", "contains '''"},
        BadCase{"user@host", "contains '@'"},
        BadCase{"-oProxyCommand=x", "host '-oProxyCommand=x' is not a valid"},
        BadCase{"a..b", "empty label"}, BadCase{"a\x1b[31m", "\\x1b"},
        BadCase{std::string("a\0b", 3), "\\x00"}, BadCase{":4", "is empty"},
        BadCase{"a =3", "host 'a=3' is not a valid"}, BadCase{"-x", "start and end"}));

TEST(Parse, ErrorNamesTheSource) {
  try {
    parse("X", "/etc/mpi/hostfile");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("/etc/mpi/hostfile:1: ")) << e.what();
  }
}

TEST(ReadFile, ReadsAndReportsMissingFiles) {
  auto path =
      std::filesystem::temp_directory_path() / ("hostfile-test-" + std::to_string(::getpid()));
  std::ofstream(path) << "x slots=2\ny:3\n";
  Hostfile h = read_file(path.string());
  EXPECT_EQ(h.total_slots(), 5);
  std::filesystem::remove(path);
  try {
    read_file(path.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
  }
}

TEST(ReadFile, RefusesDirectoriesAndEndlessFiles) {
  try {
    read_file(std::filesystem::temp_directory_path().string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  try {
    read_file("/dev/zero");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero is larger than"), std::string::npos)
        << e.what();
  }
}

TEST(ReadLimited, ReadsWholeStreamsUpToTheLimit) {
  std::string big(kMaxInputBytes, 'a');
  std::istringstream exact(big);
  EXPECT_EQ(read_limited(exact, "s").size(), kMaxInputBytes);
  std::istringstream over(big + "b");
  EXPECT_THROW(read_limited(over, "s"), Error);
}

}  // namespace
}  // namespace tutti::hostfile
