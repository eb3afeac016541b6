// The names in flight: a name is refused while it is in flight, whichever way it was recorded
// (the plan's expected names or the hash set), across changes of the expected names, and is
// accepted again once removed.
#include "engine/in_flight.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tutti::engine {
namespace {

std::vector<std::string> names(int n, const std::string& prefix = "grad.") {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

using Tag = InFlightNames::Tag;

TEST(InFlightNames, ANameIsRefusedUntilRemoved) {
  InFlightNames f;
  Tag a, b;
  EXPECT_TRUE(f.add("w", a));
  EXPECT_FALSE(f.add("w", b));
  EXPECT_TRUE(f.contains("w"));
  f.remove("w", a);
  EXPECT_FALSE(f.contains("w"));
  EXPECT_TRUE(f.add("w", b));
}

TEST(InFlightNames, AStepInThePlansOrderAndInAnyOtherOrder) {
  InFlightNames f;
  const auto plan = names(7);
  f.expect(plan);
  for (int step = 0; step < 3; ++step) {
    std::vector<Tag> tags(plan.size());
    // Step 0 in order, step 1 backwards (every look-up misses the cursor), step 2 odd ones first.
    std::vector<size_t> order;
    for (size_t i = 0; i < plan.size(); ++i) order.push_back(i);
    if (step == 1) std::reverse(order.begin(), order.end());
    if (step == 2)
      std::stable_partition(order.begin(), order.end(), [](size_t i) { return i % 2; });
    for (size_t i : order) {
      ASSERT_TRUE(f.add(plan[i], tags[i])) << plan[i];
      Tag again;
      EXPECT_FALSE(f.add(plan[i], again)) << plan[i];
    }
    Tag extra;
    EXPECT_TRUE(f.add("not.in.plan", extra));
    EXPECT_FALSE(f.add("not.in.plan", extra));
    for (size_t i : order) f.remove(plan[i], tags[i]);
    f.remove("not.in.plan", extra);
    for (const auto& n : plan) EXPECT_FALSE(f.contains(n)) << n;
    EXPECT_FALSE(f.contains("not.in.plan"));
  }
}

TEST(InFlightNames, NamesInFlightStayInFlightWhenTheExpectedNamesChange) {
  InFlightNames f;
  f.expect(names(4));
  Tag by_flag, by_hash;
  ASSERT_TRUE(f.add("grad.1", by_flag));  // recorded by its flag
  ASSERT_TRUE(f.add("other", by_hash));   // recorded in the hash set
  // New expected names that hold both: each is still refused, under its old tag.
  std::vector<std::string> next = names(4, "layer.");
  next.push_back("grad.1");
  next.push_back("other");
  f.expect(next);
  Tag t;
  EXPECT_FALSE(f.add("grad.1", t));
  EXPECT_FALSE(f.add("other", t));
  // Removed with the tags they were added with, they may come again, by the new expected names.
  f.remove("grad.1", by_flag);
  f.remove("other", by_hash);
  Tag t1, t2;
  EXPECT_TRUE(f.add("grad.1", t1));
  EXPECT_TRUE(f.add("other", t2));
  EXPECT_FALSE(f.add("other", t));
  // Expected names that drop a name in flight: it moves to the hash set.
  f.expect(names(2, "x."));
  EXPECT_FALSE(f.add("grad.1", t));
  f.remove("grad.1", t1);
  EXPECT_TRUE(f.add("grad.1", t));
  f.remove("other", t2);
  EXPECT_TRUE(f.add("other", t2));
}

TEST(InFlightNames, TheSameExpectedNamesAgainChangeNothing) {
  InFlightNames f;
  f.expect(names(3));
  Tag a;
  ASSERT_TRUE(f.add("grad.2", a));
  f.expect(names(3));
  f.remove("grad.2", a);
  EXPECT_FALSE(f.contains("grad.2"));
  EXPECT_TRUE(f.add("grad.2", a));
}

TEST(InFlightNames, ExpectedNamesWithARepeatAreNotUsed) {
  InFlightNames f;
  f.expect(std::vector<std::string>{"a", "b", "a"});
  Tag t1, t2;
  EXPECT_TRUE(f.add("a", t1));
  EXPECT_FALSE(f.add("a", t2));
}

TEST(InFlightNames, ClearForgetsEverything) {
  InFlightNames f;
  f.expect(names(2));
  Tag a, b;
  ASSERT_TRUE(f.add("grad.0", a));
  ASSERT_TRUE(f.add("z", b));
  f.clear();
  EXPECT_FALSE(f.contains("grad.0"));
  EXPECT_FALSE(f.contains("z"));
  // Removing with a tag from before clear() is harmless.
  f.remove("grad.0", a);
  f.remove("z", b);
  EXPECT_TRUE(f.add("grad.0", a));
  EXPECT_TRUE(f.add("z", b));
}

}  // namespace
}  // namespace tutti::engine
