// Ring and window sizes as the number of local ranks grows: the per-rank total stays within its
// budget (O(1) in the local size), small jobs keep the configured sizes, and the floors hold.
#include "transport/shm/shm_sizing.hpp"

#include <gtest/gtest.h>

#include <bit>

#include "transport/shm/ring.hpp"

namespace tutti::transport {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(ShmSizing, SmallJobsKeepTheConfiguredRing) {
  // 8 ranks on a host: 7 peers x (1 MiB + a control page) fits the default 8 MiB budget.
  EXPECT_EQ(ring_capacity_for(7, kMiB, 8 * kMiB), kMiB);
  EXPECT_EQ(ring_capacity_for(1, kMiB, 8 * kMiB), kMiB);
  // The configured size is rounded up to a power of two, as a ring needs.
  EXPECT_EQ(ring_capacity_for(1, 3000, 8 * kMiB), 4096u);
  EXPECT_EQ(ring_capacity_for(1, 5000, 8 * kMiB), 8192u);
}

TEST(ShmSizing, RingsShrinkToStayWithinTheBudget) {
  for (size_t peers : {8u, 15u, 31u, 63u, 127u, 255u, 511u}) {
    const size_t capacity = ring_capacity_for(peers, kMiB, 8 * kMiB);
    SCOPED_TRACE(peers);
    EXPECT_TRUE(std::has_single_bit(capacity));
    EXPECT_LE(rings_footprint(peers, capacity), 8 * kMiB);
    // The largest power of two that fits: twice as much would not.
    EXPECT_GT(rings_footprint(peers, capacity * 2), 8 * kMiB);
  }
  // 128 ranks on one host: 127 rings of 32 KiB each (64 KiB plus a page of control apiece would
  // take 8.4 MiB).
  EXPECT_EQ(ring_capacity_for(127, kMiB, 8 * kMiB), 32u << 10);
}

TEST(ShmSizing, RingsNeverGoBelowOnePage) {
  EXPECT_EQ(ring_capacity_for(5000, kMiB, 8 * kMiB), kMinRingCapacity);
  EXPECT_EQ(ring_capacity_for(2, kMiB, 0), kMinRingCapacity);
}

TEST(ShmSizing, WindowAreasShareTheBudget) {
  EXPECT_EQ(window_area_for(2, 4 * kMiB, 256 * kMiB), 4 * kMiB);
  EXPECT_EQ(window_area_for(64, 4 * kMiB, 256 * kMiB), 4 * kMiB);
  EXPECT_EQ(window_area_for(128, 4 * kMiB, 256 * kMiB), 2 * kMiB);
  // Whole pages, never more than the budget.
  const size_t area = window_area_for(7, 4 * kMiB, 10 * kMiB);
  EXPECT_EQ(area % 4096, 0u);
  EXPECT_LE(7 * area, 10 * kMiB);
  EXPECT_GT(7 * (area + 4096), 10 * kMiB);
  // Off stays off.
  EXPECT_EQ(window_area_for(4, 0, 256 * kMiB), 0u);
}

}  // namespace
}  // namespace tutti::transport
