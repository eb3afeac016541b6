#include "bootstrap/node_cpus.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <vector>

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
  const NodeCpus cpus{4, 64, "5b0a6a3e-6f1e-4f49-9d7a-3f3c2a8e1d10", {}, 0};
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

TEST(NodeCpus, MaskAndQuotaRoundTripThroughText) {
  // CPUs 0, 1 and 70 (a second word), a quota of 2.
  const NodeCpus cpus{2, 128, "id", {0x3, uint64_t{1} << 6}, 2};
  EXPECT_EQ(to_string(cpus), "2 128 id 3,40 2");
  const auto back = parse_node_cpus(to_string(cpus));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->mask, cpus.mask);
  EXPECT_EQ(back->quota, 2);
  EXPECT_EQ(to_string(NodeCpus{}), "0 0 - - 0");
}

// A process of an older build announces three fields: its CPUs are known, its mask is not.
TEST(NodeCpus, TheThreeFieldFormOfOlderBuildsStillParses) {
  const auto old = parse_node_cpus("4 64 id");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->usable, 4);
  EXPECT_TRUE(old->mask.empty());
  EXPECT_EQ(old->quota, 0);
}

TEST(NodeCpus, TextOfAnotherFormIsRefused) {
  for (const char* text :
       {"", "4", "4 64", "four 64 id", "4 64 id extra", "-1 64 id", "4 -2 id", "4 64 id 3",
        "4 64 id zz 0", "4 64 id 3 -1", "4 64 id 3, 0", "4 64 id 3 0 extra", "4 64 id ,3 0"})
    EXPECT_FALSE(parse_node_cpus(text)) << text;
}

NodeCpus bound_to(std::initializer_list<int> cpus, int quota = 0) {
  NodeCpus n;
  for (int cpu : cpus) {
    const size_t word = static_cast<size_t>(cpu) / 64;
    if (n.mask.size() <= word) n.mask.resize(word + 1, 0);
    n.mask[word] |= uint64_t{1} << (cpu % 64);
  }
  n.usable = static_cast<int>(cpus.size());
  n.quota = quota;
  return n;
}

// mpirun binds each of 2 ranks to a core: each sees 1 CPU, together they have 2.
TEST(SharedCpus, TheRanksOfAHostCountTheUnionOfTheirMasks) {
  const std::vector<NodeCpus> core_each = {bound_to({0}), bound_to({1})};
  EXPECT_EQ(shared_cpus(core_each), 2);
  const std::vector<NodeCpus> same_core = {bound_to({3}), bound_to({3})};
  EXPECT_EQ(shared_cpus(same_core), 1);
  const std::vector<NodeCpus> overlapping = {bound_to({0, 1, 2}), bound_to({2, 3}), bound_to({70})};
  EXPECT_EQ(shared_cpus(overlapping), 5);
}

TEST(SharedCpus, AQuotaCapsTheUnion) {
  const std::vector<NodeCpus> in_a_pod = {bound_to({0, 1, 2, 3}, 2), bound_to({0, 1, 2, 3}, 2)};
  EXPECT_EQ(shared_cpus(in_a_pod), 2);
  const std::vector<NodeCpus> one_limited = {bound_to({0, 1}, 0), bound_to({2, 3}, 1)};
  EXPECT_EQ(shared_cpus(one_limited), 1);
}

TEST(SharedCpus, AnUnknownMaskFallsBackToTheLargestUsableCount) {
  NodeCpus older;
  older.usable = 3;
  const std::vector<NodeCpus> mixed = {bound_to({0}), older};
  EXPECT_EQ(shared_cpus(mixed), 3);
  EXPECT_EQ(shared_cpus(std::vector<NodeCpus>{}), 0);
  EXPECT_EQ(shared_cpus(std::vector<NodeCpus>{NodeCpus{}}), 0);
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
  int in_mask = 0;
  for (uint64_t word : here.mask) in_mask += std::popcount(word);
  EXPECT_EQ(in_mask, CPU_COUNT(&set));
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    const size_t word = static_cast<size_t>(cpu) / 64;
    const bool in = word < here.mask.size() && ((here.mask[word] >> (cpu % 64)) & 1) != 0;
    EXPECT_EQ(in, CPU_ISSET(cpu, &set) != 0) << "CPU " << cpu;
  }
}

}  // namespace
}  // namespace tutti::bootstrap
