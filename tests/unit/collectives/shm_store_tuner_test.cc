// ShmStoreTuner: which stores the shm allreduce uses per size class, from the times it is fed.
#include "collectives/shm_store_tuner.hpp"

#include <gtest/gtest.h>

#include <map>
#include <utility>

namespace tutti::collectives {
namespace {

using reduce::CopyStores;
constexpr CopyStores kC = CopyStores::kCached;
constexpr CopyStores kS = CopyStores::kStreaming;
constexpr size_t kBig = 32 << 20;

std::pair<CopyStores, CopyStores> as_pair(ShmStores s) {
  return {s.window, s.output};
}

// Feeds `calls` calls of `bytes` to the tuner, each taking the time `ns_of` gives for its stores,
// and counts how often each combination was chosen.
template <typename NsOf>
std::map<std::pair<CopyStores, CopyStores>, int> drive(ShmStoreTuner& tuner, size_t bytes,
                                                       bool in_place, int calls, NsOf ns_of) {
  std::map<std::pair<CopyStores, CopyStores>, int> chosen;
  for (int i = 0; i < calls; ++i) {
    const ShmStores s = tuner.choose(bytes, in_place);
    ++chosen[as_pair(s)];
    tuner.record(bytes, in_place, s, ns_of(s));
  }
  return chosen;
}

TEST(ShmStoreTuner, SmallMessagesAreCachedAndUntimed) {
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  const size_t small = ShmStoreTuner::kMinTunedBytes - 1;
  EXPECT_FALSE(tuner.timed(small));
  EXPECT_TRUE(tuner.timed(ShmStoreTuner::kMinTunedBytes));
  for (bool in_place : {true, false})
    EXPECT_EQ(as_pair(tuner.choose(small, in_place)), std::make_pair(kC, kC));
}

TEST(ShmStoreTuner, ForcedModesForceWindowAndOutput) {
  ShmStoreTuner cached(ShmStoreTuner::Mode::kCached);
  ShmStoreTuner streaming(ShmStoreTuner::Mode::kStreaming);
  for (bool in_place : {true, false}) {
    EXPECT_EQ(as_pair(cached.choose(kBig, in_place)), std::make_pair(kC, kC));
    EXPECT_EQ(as_pair(streaming.choose(kBig, in_place)), std::make_pair(kS, kS));
  }
  EXPECT_FALSE(cached.timed(kBig));
  EXPECT_FALSE(streaming.timed(kBig));
}

// Each of the four combinations in turn is the fastest: the tuner tries all, then settles on it,
// still exploring the others now and then.
class ShmStoreTunerBest
    : public ::testing::TestWithParam<std::tuple<CopyStores, CopyStores, bool>> {};

TEST_P(ShmStoreTunerBest, SettlesOnTheFastestCombination) {
  const auto [window, output, in_place] = GetParam();
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  const auto chosen = drive(tuner, kBig, in_place, 400, [&](ShmStores s) {
    return (s.window == window && s.output == output) ? 1e6 : 2e6;
  });
  ASSERT_EQ(chosen.size(), 4u) << "every combination is tried";
  const int best = chosen.at({window, output});
  EXPECT_GE(best, 360) << "the fastest is used except when exploring";
  for (const auto& [stores, n] : chosen) {
    if (stores != std::make_pair(window, output)) {
      // Twice to warm up, then tried again now and then (rarely: each is 2x slower).
      EXPECT_GE(n, 3) << "each other one is explored";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCombinations, ShmStoreTunerBest,
                         ::testing::Combine(::testing::Values(kC, kS), ::testing::Values(kC, kS),
                                            ::testing::Bool()));

TEST(ShmStoreTuner, TriesCloseCombinationsOftenAndFarOnesRarely) {
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  // (C, C) best; (S, C) 1.2x (close); the two with streaming output 3x (far behind).
  const auto chosen = drive(tuner, kBig, false, 800, [](ShmStores s) {
    if (s.output == kS) return 3e6;
    return s.window == kC ? 1e6 : 1.2e6;
  });
  EXPECT_GE(chosen.at({kS, kC}), 24);  // a two-call trial every third turn of 16 calls
  EXPECT_LE(chosen.at({kC, kS}), 8);   // 2 to warm up, then a rare trial or three
  EXPECT_LE(chosen.at({kS, kS}), 8);
  EXPECT_GE(chosen.at({kC, kC}), 740);
}

TEST(ShmStoreTuner, TheCallAfterATryDoesNotCount) {
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  // (C, C) is best, but the call after any other combination runs 3x slower (that combination's
  // streaming stores pushed the buffers out of cache). Counting those calls against (C, C) would
  // make the close second, (S, C), look faster.
  bool after_other = false;
  int best = 0;
  for (int i = 0; i < 800; ++i) {
    const ShmStores s = tuner.choose(kBig, true);
    const bool cc = s.window == kC && s.output == kC;
    double ns = cc ? 1e6 : (s.output == kS ? 3e6 : 1.2e6);
    if (cc && after_other) ns = 3e6;
    tuner.record(kBig, true, s, ns);
    after_other = !cc;
    if (i >= 100) best += cc;
  }
  EXPECT_GE(best, 640);  // of 700
}

TEST(ShmStoreTuner, FollowsAChangeOfTheFastest) {
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  // First cached everywhere is fastest (vCPUs near each other, output in cache), then streaming
  // everywhere (vCPUs moved apart): the explored calls notice and the choice moves.
  drive(tuner, kBig, false, 200,
        [](ShmStores s) { return s.window == kC && s.output == kC ? 1e6 : 3e6; });
  const auto later = drive(tuner, kBig, false, 400, [](ShmStores s) {
    return s.window == kS && s.output == kS ? 1e6 : 3e6;
  });
  EXPECT_GE(later.at({kS, kS}), 300);
}

TEST(ShmStoreTuner, ANewSizeStartsFromTheNearestMeasuredOne) {
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  drive(tuner, 16 << 20, false, 100,
        [](ShmStores s) { return s.window == kS && s.output == kS ? 1e6 : 3e6; });
  // 64 MiB, never seen: its first calls use what 16 MiB found best, without trying the others
  // first (every call of a short sweep would otherwise pay for four warm-up combinations).
  const auto first = drive(tuner, 64 << 20, false, 15, [](ShmStores) { return 4e6; });
  EXPECT_EQ(first.size(), 1u);
  EXPECT_EQ(first.count({kS, kS}), 1u);
  // In place is tuned apart: nothing measured there yet, so it warms up every combination.
  EXPECT_EQ(drive(tuner, 64 << 20, true, 8, [](ShmStores) { return 4e6; }).size(), 4u);
  // Where this size's best differs, the explored calls find it.
  const auto later = drive(tuner, 64 << 20, false, 400, [](ShmStores s) {
    return s.window == kC && s.output == kS ? 2e6 : 8e6;
  });
  EXPECT_GE(later.at({kC, kS}), 300);
}

TEST(ShmStoreTuner, ABestThatTurnsSlowIsQuestionedAtOnce) {
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  drive(tuner, kBig, true, 40, [](ShmStores s) {
    if (s.output == kS) return 3e6;
    return s.window == kC ? 1e6 : 2.5e6;
  });
  // The vCPUs move apart: cached window stores now cost 2.7x, streaming ones are fast. Waiting for
  // the next turn of the explore schedule would spend up to 16 more slow calls.
  const ShmStores a = tuner.choose(kBig, true);
  EXPECT_EQ(a.window, kC);
  tuner.record(kBig, true, a, 2.7e6);
  int streaming = 0;
  for (int i = 0; i < 6; ++i) {
    const ShmStores s = tuner.choose(kBig, true);
    streaming += s.window == kS;
    tuner.record(kBig, true, s, s.output == kS ? 3e6 : s.window == kC ? 2.7e6 : 1.0e6);
  }
  EXPECT_GE(streaming, 4);
}

TEST(ShmStoreTuner, SizeClassesAndPlacementsAreTunedApart) {
  ShmStoreTuner tuner(ShmStoreTuner::Mode::kAuto);
  // Out of place at 32 MiB wants streaming output; in place at 32 MiB and out of place at 1 MiB
  // want cached output. Interleaved, as a trainer's calls are.
  for (int i = 0; i < 300; ++i) {
    const ShmStores a = tuner.choose(kBig, false);
    tuner.record(kBig, false, a, a.output == kS ? 1e6 : 2e6);
    const ShmStores b = tuner.choose(kBig, true);
    tuner.record(kBig, true, b, b.output == kC ? 1e6 : 2e6);
    const ShmStores c = tuner.choose(1 << 20, false);
    tuner.record(1 << 20, false, c, c.output == kC ? 1e5 : 2e5);
  }
  int right = 0;
  for (int i = 0; i < 15; ++i) {
    right += tuner.choose(kBig, false).output == kS;
    right += tuner.choose(kBig, true).output == kC;
    right += tuner.choose(1 << 20, false).output == kC;
  }
  EXPECT_GE(right, 42);  // all but the few explored calls
}

}  // namespace
}  // namespace tutti::collectives
