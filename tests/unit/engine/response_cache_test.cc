// The response cache must make the same decisions on every rank from the same calls: slots handed
// out in order, emptied slots reused lowest first, the least recently used evicted when full.
#include "engine/response_cache.hpp"

#include <gtest/gtest.h>

namespace tutti::engine {
namespace {

Response response(const std::string& name, uint64_t count) {
  Response r;
  r.name = name;
  r.spec.count = count;
  return r;
}

TEST(ResponseCache, HandsOutSlotsInOrderAndFindsOnlyTheSameSpec) {
  ResponseCache c(4);
  c.put(response("a", 10));
  c.put(response("b", 20));
  OpSpec ten;
  ten.count = 10;
  ASSERT_TRUE(c.slot_for("a", ten, 0).has_value());
  EXPECT_EQ(0u, *c.slot_for("a", ten, 0));
  OpSpec twenty;
  twenty.count = 20;
  EXPECT_EQ(1u, *c.slot_for("b", twenty, 0));
  EXPECT_FALSE(c.slot_for("a", twenty, 0).has_value());  // another spec: announce instead
  EXPECT_FALSE(c.slot_for("c", ten, 0).has_value());
  EXPECT_EQ(2u, c.slots());
}

TEST(ResponseCache, EvictsTheLeastRecentlyUsedWhenFull) {
  ResponseCache c(3);
  c.put(response("a", 1));
  c.put(response("b", 1));
  c.put(response("c", 1));
  c.touch(0);  // a used again: b is now the oldest
  c.put(response("d", 1));
  EXPECT_FALSE(c.contains("b"));
  EXPECT_TRUE(c.contains("a"));
  EXPECT_EQ("d", c.at(1).name);  // b's slot
  EXPECT_EQ(3u, c.slots());
}

// A kept plan is good while no slot changed hands (plan.hpp): every put and every eviction of a
// cached name count; hits and evictions of names not cached do not.
TEST(ResponseCache, GenerationCountsChangesOfWhoHoldsASlot) {
  ResponseCache c(2);
  const uint64_t g0 = c.generation();
  c.put(response("a", 1));
  c.put(response("b", 1));
  const uint64_t g1 = c.generation();
  EXPECT_GT(g1, g0);
  c.touch(0);
  c.evict("nobody");
  EXPECT_EQ(g1, c.generation());
  c.put(response("c", 1));  // full: evicts b, whose slot c now holds
  EXPECT_GT(c.generation(), g1);
  const uint64_t g2 = c.generation();
  c.evict("a");
  EXPECT_GT(c.generation(), g2);
}

TEST(ResponseCache, ReusesTheLowestEmptiedSlot) {
  ResponseCache c(8);
  for (const char* n : {"a", "b", "c", "d"}) c.put(response(n, 1));
  c.evict("c");
  c.evict("b");
  c.put(response("e", 1));
  EXPECT_EQ("e", c.at(1).name);
  EXPECT_FALSE(c.occupied(2));
  EXPECT_EQ(4u, c.slots());
}

TEST(ResponseCache, PerRankSpecsAreComparedWithTheRanksOwn) {
  ResponseCache c(2);
  Response r = response("g", 4);
  r.spec.kind = OpKind::kAllgather;
  r.per_rank = {r.spec, r.spec};
  r.per_rank[0].rows = 1;
  r.per_rank[1].rows = 2;
  c.put(r);
  OpSpec mine = r.spec;
  mine.rows = 2;
  EXPECT_FALSE(c.slot_for("g", mine, 0).has_value());
  EXPECT_TRUE(c.slot_for("g", mine, 1).has_value());
}

TEST(ResponseCache, CapacityZeroCachesNothing) {
  ResponseCache c(0);
  c.put(response("a", 1));
  EXPECT_FALSE(c.contains("a"));
  EXPECT_EQ(0u, c.slots());
}

}  // namespace
}  // namespace tutti::engine
