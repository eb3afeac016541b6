// The fusion groups, which a cycle and its replay both run by: the same responses must give the
// same groups in the same order on every rank, and a replay runs exactly what the cycle ran.
#include "engine/plan.hpp"

#include <gtest/gtest.h>

namespace tutti::engine {
namespace {

Response allreduce(uint64_t count, DataType type = DataType::kFloat32,
                   ReduceOp op = ReduceOp::kSum) {
  Response r;
  r.spec.kind = OpKind::kAllreduce;
  r.spec.count = count;
  r.spec.type = type;
  r.spec.op = op;
  return r;
}

Response broadcast(uint64_t count) {
  Response r = allreduce(count);
  r.spec.kind = OpKind::kBroadcast;
  r.spec.root = 0;
  return r;
}

using Groups = std::vector<std::vector<size_t>>;

TEST(FusionGroups, NothingGivesNoGroup) {
  EXPECT_EQ(Groups{}, fusion_groups({}, 1024));
}

TEST(FusionGroups, AllreducesOfOneKindFuseUpToTheThreshold) {
  // 100 floats = 400 bytes: two fit under 1000, the third opens a new batch.
  const std::vector<Response> rs = {allreduce(100), allreduce(100), allreduce(100)};
  EXPECT_EQ((Groups{{0, 1}, {2}}), fusion_groups(rs, 1000));
  EXPECT_EQ((Groups{{0, 1, 2}}), fusion_groups(rs, 1200));
  // Threshold 0: nothing fuses (TUTTI_FUSION_THRESHOLD=0).
  EXPECT_EQ((Groups{{0}, {1}, {2}}), fusion_groups(rs, 0));
}

TEST(FusionGroups, KindsFuseApartAndRunInTheOrderTheirBatchesOpened) {
  const std::vector<Response> rs = {allreduce(10), allreduce(10, DataType::kInt32), allreduce(10),
                                    allreduce(10, DataType::kFloat32, ReduceOp::kMax),
                                    allreduce(10, DataType::kInt32)};
  EXPECT_EQ((Groups{{0, 2}, {1, 4}, {3}}), fusion_groups(rs, 1 << 20));
}

TEST(FusionGroups, WhatCannotFuseRunsAloneAfterEverythingBeforeIt) {
  // A broadcast, an empty allreduce and one above the threshold each flush the open batches.
  const std::vector<Response> rs = {allreduce(10),  allreduce(10, DataType::kInt32),
                                    broadcast(10),  allreduce(10),
                                    allreduce(0),   allreduce(10),
                                    allreduce(1000)};
  EXPECT_EQ((Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}}), fusion_groups(rs, 400));
  const std::vector<Response> more = {allreduce(10), allreduce(10), broadcast(1), allreduce(10),
                                      allreduce(10)};
  EXPECT_EQ((Groups{{0, 1}, {2}, {3, 4}}), fusion_groups(more, 400));
}

TEST(FusionGroups, ScalesAreAPartOfTheKind) {
  std::vector<Response> rs = {allreduce(10), allreduce(10), allreduce(10)};
  rs[1].spec.prescale = 0.5;
  EXPECT_EQ((Groups{{0, 2}, {1}}), fusion_groups(rs, 1 << 20));
}

TEST(Plan, ClearedIsInvalid) {
  Plan p;
  EXPECT_FALSE(p.valid());
  p.names = {"a"};
  p.groups = {{0}};
  EXPECT_TRUE(p.valid());
  p.clear();
  EXPECT_FALSE(p.valid());
  EXPECT_TRUE(p.groups.empty());
}

}  // namespace
}  // namespace tutti::engine
