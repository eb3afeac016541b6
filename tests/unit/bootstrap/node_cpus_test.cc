#include "bootstrap/node_cpus.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

namespace tutti::bootstrap {
namespace {

TEST(CpusOfQuota, RoundsAQuotaUpToWholeCpus) {
  EXPECT_EQ(cpus_of_quota("200000 100000"), 2);
  EXPECT_EQ(cpus_of_quota("150000 100000"), 2);
  EXPECT_EQ(cpus_of_quota("50000 100000"), 1);
  EXPECT_EQ(cpus_of_quota("100000 100000"), 1);
}

TEST(CpusOfQuota, NoLimitOrOtherTextIsZero) {
  EXPECT_EQ(cpus_of_quota("max 100000"), 0);  // cgroup v2 without a limit
  EXPECT_EQ(cpus_of_quota("-1 100000"), 0);   // cgroup v1 without a limit
  EXPECT_EQ(cpus_of_quota(""), 0);
  EXPECT_EQ(cpus_of_quota("200000"), 0);
  EXPECT_EQ(cpus_of_quota("200000 0"), 0);
  EXPECT_EQ(cpus_of_quota("2e5 100000"), 0);
  EXPECT_EQ(cpus_of_quota("200000 100000 x"), 0);
}

TEST(NodeCpus, RoundTripsThroughText) {
  const NodeCpus cpus{4, 64, "5b0a6a3e-6f1e-4f49-9d7a-3f3c2a8e1d10"};
  const auto back = parse_node_cpus(to_string(cpus));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->usable, 4);
  EXPECT_EQ(back->online, 64);
  EXPECT_EQ(back->node, cpus.node);
  const auto unknown = parse_node_cpus(to_string(NodeCpus{}));
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->usable, 0);
  EXPECT_EQ(unknown->online, 0);
  EXPECT_EQ(unknown->node, "");
}

TEST(NodeCpus, TextOfAnotherFormIsRefused) {
  for (const char* text : {"", "4", "4 64", "four 64 id", "4 64 id extra", "-1 64 id", "4 -2 id"})
    EXPECT_FALSE(parse_node_cpus(text)) << text;
}

TEST(NodeCpus, ThisProcessHasSomeOfTheMachinesCpusAndABootId) {
  const NodeCpus here = node_cpus_here();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_GE(here.usable, 1);
  EXPECT_LE(here.usable, CPU_COUNT(&set));  // a quota may only lower it
  EXPECT_EQ(here.online, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_GE(here.online, here.usable);
  EXPECT_EQ(here.node.size(), 36u) << here.node;  // a UUID, as Linux writes its boot id
}

}  // namespace
}  // namespace tutti::bootstrap
