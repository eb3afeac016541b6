#include "kubexec/pod_name.hpp"

#include <gtest/gtest.h>

#include "tutti/error.hpp"

namespace tutti::kubexec {
namespace {

struct HostCase {
  std::string host;
  std::string pod;
};

class StripsDomain : public ::testing::TestWithParam<HostCase> {};

TEST_P(StripsDomain, ToTheFirstLabel) {
  EXPECT_EQ(pod_from_host(GetParam().host), GetParam().pod);
}

INSTANTIATE_TEST_SUITE_P(Hosts, StripsDomain,
                         ::testing::Values(HostCase{"job-worker-0", "job-worker-0"},
                                           HostCase{"job-worker-0.job", "job-worker-0"},
                                           HostCase{"job-worker-3.job.team-a.svc", "job-worker-3"},
                                           HostCase{"job-worker-12.job.default.svc.cluster.local",
                                                    "job-worker-12"},
                                           HostCase{"0abc", "0abc"},
                                           HostCase{std::string(63, 'a'), std::string(63, 'a')}));

class RejectsHostile : public ::testing::TestWithParam<std::string> {};

TEST_P(RejectsHostile, WithAConfigErrorThatShowsTheNameEscaped) {
  try {
    pod_from_host(GetParam());
    FAIL() << "accepted " << GetParam();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    std::string message = e.what();
    EXPECT_NE(message.find("is not a pod name"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "raw newline in: " << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Names, RejectsHostile,
                         ::testing::Values("", "job;id", "job worker", "job\nworker", "job\tx",
                                           "Job-Worker-0", "$(id)", "`id`", "a|b", "a&b", "a>b",
                                           "-oProxyCommand=x", "job-", ".job", "job..svc",
                                           "job.svc;id", "pod/job", "j\"q", "j'q", "j\\x",
                                           std::string(64, 'a'), std::string("a\0b", 3),
                                           "caf\xc3\xa9"));

}  // namespace
}  // namespace tutti::kubexec

namespace tutti::kubexec {
namespace {

// "10.0.0.1" once became the pod "10".
TEST(PodFromHost, RefusesIpAddresses) {
  for (const char* host : {"10.0.0.1", "198.18.0.3", "::1", "fe80::1", "2001:db8::2"}) {
    try {
      pod_from_host(host);
      ADD_FAILURE() << host << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig);
      EXPECT_NE(std::string(e.what()).find("is an IP address, not a pod name"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(pod_from_host("10"), "10");  // a pod may be named with digits only
}

}  // namespace
}  // namespace tutti::kubexec
