#include "kubexec/retry.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tutti::kubexec {
namespace {

class Transient : public ::testing::TestWithParam<std::string> {};
TEST_P(Transient, IsRetried) {
  EXPECT_TRUE(is_transient_failure(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(
    KubectlMessages, Transient,
    ::testing::Values(
        "error: unable to upgrade connection: container not found (\"mpi\")\n",
        "error: unable to upgrade connection: pod does not exist\n",
        "Error from server (BadRequest): pod job-worker-0 is not running\n",
        "error: error dialing backend: dial tcp 10.0.0.5:10250: connect: connection refused\n",
        "Error from server (BadRequest): container \"mpi\" in pod \"job-worker-1\" is waiting to "
        "start: ContainerCreating\n",
        "Error from server (BadRequest): pod job-worker-2 does not have a host assigned\n"));

class Permanent : public ::testing::TestWithParam<std::string> {};
TEST_P(Permanent, IsNotRetried) {
  EXPECT_FALSE(is_transient_failure(GetParam()));
}
INSTANTIATE_TEST_SUITE_P(
    KubectlMessages, Permanent,
    ::testing::Values("", "Error from server (NotFound): pods \"x\" not found\n",
                      "Error from server (Forbidden): pods \"x\" is forbidden: User cannot create "
                      "resource \"pods/exec\"\n",
                      "error: cannot exec into a container in a completed pod; current phase is "
                      "Succeeded\n",
                      "command terminated with exit code 3\n", "orted: unknown option\n"));

TEST(Backoff, DoublesFromAQuarterSecondUpToFiveSeconds) {
  EXPECT_EQ(backoff_delay(0).count(), 250);
  EXPECT_EQ(backoff_delay(1).count(), 500);
  EXPECT_EQ(backoff_delay(2).count(), 1000);
  EXPECT_EQ(backoff_delay(4).count(), 4000);
  EXPECT_EQ(backoff_delay(5).count(), 5000);
  EXPECT_EQ(backoff_delay(1000).count(), 5000);
}

}  // namespace
}  // namespace tutti::kubexec
