#include "launcher/plan.hpp"

#include <gtest/gtest.h>

#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

hostfile::Hostfile hosts(std::vector<std::pair<std::string, int>> list) {
  hostfile::Hostfile h;
  for (auto& [name, slots] : list) h.hosts.push_back({name, slots, std::nullopt});
  return h;
}

TEST(PlanHosts, FillsEachHostsSlotsInOrder) {
  JobPlan p = plan_hosts(hosts({{"a", 2}, {"b", 3}, {"c", 1}}), 0);
  ASSERT_EQ(p.world_size(), 6);
  std::vector<std::string> host_of;
  for (const RankSlot& s : p.slots) host_of.push_back(s.host);
  EXPECT_EQ(host_of, (std::vector<std::string>{"a", "a", "b", "b", "b", "c"}));
  EXPECT_EQ(p.slots[3].local_rank, 1);
  EXPECT_EQ(p.slots[3].local_size, 3);
  EXPECT_EQ(p.slots[3].cross_rank, 1);
  EXPECT_EQ(p.slots[5].cross_rank, 2);
  for (const RankSlot& s : p.slots) EXPECT_EQ(s.cross_size, 3);
  for (int r = 0; r < 6; ++r) EXPECT_EQ(p.slots[static_cast<size_t>(r)].rank, r);
  EXPECT_EQ(p.hosts(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(PlanHosts, FewerRanksLeaveLaterHostsOut) {
  JobPlan p = plan_hosts(hosts({{"a", 2}, {"b", 3}, {"c", 1}}), 3);
  ASSERT_EQ(p.world_size(), 3);
  EXPECT_EQ(p.slots[2].host, "b");
  EXPECT_EQ(p.slots[2].local_size, 1);  // only one of b's slots is used
  EXPECT_EQ(p.slots[2].cross_size, 2);  // c runs nothing and is not part of the job
  EXPECT_EQ(p.hosts().size(), 2u);
}

TEST(PlanHosts, MoreRanksThanSlotsIsAConfigError) {
  try {
    plan_hosts(hosts({{"a", 2}, {"b", 1}}), 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("-np 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 slot"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_hosts(hostfile::Hostfile{}, 0), Error);
}

TEST(PlanLocal, EveryRankOnThisHost) {
  JobPlan p = plan_local(3);
  ASSERT_EQ(p.world_size(), 3);
  EXPECT_EQ(p.slots[2].local_rank, 2);
  EXPECT_EQ(p.slots[2].local_size, 3);
  EXPECT_EQ(p.hosts(), (std::vector<std::string>{"localhost"}));
}

}  // namespace
}  // namespace tutti::launcher
