#include "collectives/cpu_share.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tutti::collectives {
namespace {

struct Ranks {
  std::vector<int> host, machine, usable, online;
  // `n` ranks on host `h` of machine `m`, each allowed `cpus` of the machine's `machine_cpus`.
  Ranks& add(int n, int h, int m, int cpus, int machine_cpus) {
    for (int i = 0; i < n; ++i) {
      host.push_back(h);
      machine.push_back(m);
      usable.push_back(cpus);
      online.push_back(machine_cpus);
    }
    return *this;
  }
  CpuShare share() const { return cpu_share_of(host, machine, usable, online); }
};

TEST(CpuShare, PodsOfOneSmallMachineShareItsCpus) {
  // The pods of docs/PERFORMANCE.md's "Scale across pods": 2 ranks in each of 8 network-namespace
  // pods on one 2-vCPU machine; every pod sees both vCPUs.
  Ranks r;
  for (int pod = 0; pod < 8; ++pod) r.add(2, pod, 0, 2, 2);
  EXPECT_DOUBLE_EQ(r.share().ranks, 8);
  EXPECT_DOUBLE_EQ(r.share().leaders, 4);
}

TEST(CpuShare, MachinesOfTheirOwnShareNothing) {
  Ranks r;
  r.add(8, 0, 0, 96, 96).add(8, 1, 1, 96, 96);
  EXPECT_DOUBLE_EQ(r.share().ranks, 1);
  EXPECT_DOUBLE_EQ(r.share().leaders, 1);
}

TEST(CpuShare, PodsWithCpuLimitsOnALargeNodeHaveTheirLimits) {
  // 4 pods of one rank each, limited to 2 CPUs, on a 64-CPU node: 8 CPUs between them.
  Ranks r;
  for (int pod = 0; pod < 4; ++pod) r.add(1, pod, 0, 2, 64);
  EXPECT_DOUBLE_EQ(r.share().ranks, 1);
  // 3 ranks in a pod limited to 2 CPUs crowd that pod, whatever the node has.
  r.add(3, 4, 0, 2, 64);
  EXPECT_DOUBLE_EQ(r.share().ranks, 1.5);
  EXPECT_DOUBLE_EQ(r.share().leaders, 1);
}

TEST(CpuShare, TheMostCrowdedMachineCounts) {
  Ranks r;
  r.add(2, 0, 0, 8, 8).add(2, 1, 0, 8, 8);  // machine 0: 4 ranks on 8 CPUs
  r.add(3, 2, 1, 2, 2).add(3, 3, 1, 2, 2);  // machine 1: 6 ranks on 2 CPUs
  EXPECT_DOUBLE_EQ(r.share().ranks, 3);
  EXPECT_DOUBLE_EQ(r.share().leaders, 1);
}

TEST(CpuShare, UnknownCpusNeverRaiseIt) {
  Ranks r;
  r.add(4, 0, 0, 0, 2).add(4, 1, 0, 0, 2);  // usable unknown: the machine's 2 CPUs count
  EXPECT_DOUBLE_EQ(r.share().ranks, 4);
  Ranks none;
  none.add(4, 0, 0, 0, 0).add(4, 1, 1, 0, 0);
  EXPECT_DOUBLE_EQ(none.share().ranks, 1);
  EXPECT_DOUBLE_EQ(none.share().leaders, 1);
  // Lists of different lengths (no CPUs announced) leave it at 1.
  EXPECT_DOUBLE_EQ(cpu_share_of(r.host, r.machine, {}, {}).ranks, 1);
  EXPECT_DOUBLE_EQ(cpu_share_of({}, {}, {}, {}).ranks, 1);
}

}  // namespace
}  // namespace tutti::collectives
