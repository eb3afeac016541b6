// Negotiation is decentralised: every rank runs its own Negotiation over the same bytes. These
// tests run one per rank over identical inputs and check that they decide the same things, in the
// same order, and fail mismatches, stalls and shutdowns with one message.
#include "engine/negotiation.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tutti::engine {
namespace {

OpSpec allreduce(uint64_t count, DataType type = DataType::kFloat32) {
  OpSpec s;
  s.count = count;
  s.type = type;
  return s;
}

struct World {
  explicit World(int size, size_t cache = 16) {
    for (int r = 0; r < size; ++r) ranks.emplace_back(r, size, cache, "test engine");
  }
  // One cycle: every rank's announcements (and cache bits) go to every rank's Negotiation.
  std::vector<Negotiation::Outcome> cycle(std::vector<Announcements>& mine,
                                          std::vector<uint64_t> and_bits = {}) {
    std::vector<std::span<const std::byte>> views;
    for (auto& a : mine) views.push_back(a.bytes());
    std::vector<Negotiation::Outcome> out;
    for (auto& n : ranks) out.push_back(n.process(and_bits, views));
    return out;
  }
  std::vector<Negotiation> ranks;
};

std::vector<std::string> names(const Negotiation::Outcome& o) {
  std::vector<std::string> v;
  for (const auto& r : o.responses) v.push_back(r.name);
  return v;
}

TEST(Negotiation, ANameRunsOnceEveryRankAnnouncedItInFirstAnnouncedOrder) {
  World w(3);
  std::vector<Announcements> a(3);
  a[0].request("x", allreduce(4));
  a[0].request("y", allreduce(4));
  a[1].request("y", allreduce(4));
  auto first = w.cycle(a);
  for (const auto& o : first) EXPECT_TRUE(o.responses.empty());
  std::vector<Announcements> b(3);
  b[1].request("x", allreduce(4));
  b[2].request("y", allreduce(4));
  b[2].request("x", allreduce(4));
  auto second = w.cycle(b);
  for (const auto& o : second) EXPECT_EQ((std::vector<std::string>{"x", "y"}), names(o));
}

TEST(Negotiation, ARunNameIsCachedAndHitsByItsBitAlone) {
  World w(2);
  std::vector<Announcements> a(2);
  a[0].request("g", allreduce(8));
  a[1].request("g", allreduce(8));
  w.cycle(a);
  for (auto& n : w.ranks) ASSERT_TRUE(n.cache().slot_for("g", allreduce(8), 0).has_value());
  std::vector<Announcements> quiet(2);
  auto hit = w.cycle(quiet, {uint64_t{1}});
  for (const auto& o : hit) {
    ASSERT_EQ(1u, o.responses.size());
    EXPECT_TRUE(o.responses[0].cached);
    EXPECT_EQ("g", o.responses[0].name);
    EXPECT_FALSE(o.announcements);
  }
}

TEST(Negotiation, DisagreementFailsEveryRankWithOneMessageNamingTheRanks) {
  World w(4);
  std::vector<Announcements> a(4);
  for (int r = 0; r < 4; ++r) a[r].request("w", allreduce(r == 2 ? 12 : 10));
  auto out = w.cycle(a);
  for (const auto& o : out) {
    ASSERT_EQ(1u, o.responses.size());
    ASSERT_EQ(Response::Kind::kFail, o.responses[0].kind);
    EXPECT_EQ(ErrorCode::kMismatch, o.responses[0].error->code());
    EXPECT_STREQ(out[0].responses[0].error->what(), o.responses[0].error->what());
  }
  const std::string m = out[0].responses[0].error->what();
  EXPECT_NE(std::string::npos, m.find("'w'")) << m;
  EXPECT_NE(std::string::npos, m.find("ranks 0,1,3: allreduce of 10 float32")) << m;
  EXPECT_NE(std::string::npos, m.find("rank 2: allreduce of 12 float32")) << m;
  EXPECT_NE(std::string::npos, m.find("count 10 vs 12")) << m;
  // Nothing of a failed name stays cached.
  EXPECT_FALSE(w.ranks[0].cache().contains("w"));
}

TEST(Negotiation, AnAnnouncementEvictsACachedNameOnEveryRank) {
  World w(2);
  std::vector<Announcements> a(2);
  for (auto& x : a) x.request("g", allreduce(8));
  w.cycle(a);
  std::vector<Announcements> b(2);
  b[1].request("g", allreduce(9));  // rank 1 changed its size: rank 0 must announce too
  w.cycle(b);
  for (auto& n : w.ranks) {
    EXPECT_FALSE(n.cache().contains("g"));
    EXPECT_TRUE(n.announced("g"));
  }
}

TEST(Negotiation, JoinedRanksAreNotWaitedForAndJoinCompletesWhenAllJoined) {
  World w(3);
  std::vector<Announcements> a(3);
  a[0].join();
  a[1].request("g", allreduce(5));
  a[2].request("g", allreduce(5));
  auto out = w.cycle(a);
  for (const auto& o : out) {
    ASSERT_EQ(1u, o.responses.size());
    EXPECT_EQ(std::vector<int>{0}, o.responses[0].joined);
  }
  EXPECT_FALSE(w.ranks[0].cache().contains("g"));  // ran with a joined rank: not cached
  std::vector<Announcements> b(3);
  b[2].join();
  b[1].join();
  auto done = w.cycle(b);
  for (const auto& o : done) {
    ASSERT_EQ(1u, o.responses.size());
    EXPECT_EQ(Response::Kind::kJoin, o.responses[0].kind);
    EXPECT_EQ(2, o.responses[0].last_joined);
  }
}

TEST(Negotiation, ReduceScatterAndBroadcastFromAJoinedRootAreRefused) {
  World w(2);
  std::vector<Announcements> a(2);
  a[0].join();
  OpSpec rs = allreduce(4);
  rs.kind = OpKind::kReduceScatter;
  a[1].request("rs", rs);
  OpSpec bc = allreduce(4);
  bc.kind = OpKind::kBroadcast;
  bc.root = 0;
  a[1].request("bc", bc);
  auto out = w.cycle(a);
  ASSERT_EQ(2u, out[1].responses.size());
  for (const auto& r : out[1].responses) EXPECT_EQ(Response::Kind::kFail, r.kind);
}

TEST(Negotiation, StallsNameTheMissingRanksAndAStallFailEndsTheName) {
  World w(3);
  std::vector<Announcements> a(3);
  a[0].request("s", allreduce(1));
  a[2].request("s", allreduce(1));
  w.cycle(a);
  auto stalls = w.ranks[0].stalls(Clock::now(), Clock::duration::zero());
  ASSERT_EQ(1u, stalls.size());
  EXPECT_EQ(std::vector<int>{1}, stalls[0].missing);
  EXPECT_EQ((std::vector<int>{0, 2}), stalls[0].present);
  std::vector<Announcements> b(3);
  b[0].stall_fail("s", "s stalled");
  auto out = w.cycle(b);
  for (const auto& o : out) {
    ASSERT_EQ(1u, o.responses.size());
    EXPECT_EQ(ErrorCode::kTimeout, o.responses[0].error->code());
  }
  EXPECT_FALSE(w.ranks[1].announced("s"));
}

TEST(Negotiation, AShutdownFailsWhatIsWaitingAndEndsWhenEveryRankShutDown) {
  World w(2);
  std::vector<Announcements> a(2);
  a[0].request("late", allreduce(1));
  a[1].shutdown("tutti_finalize");
  auto out = w.cycle(a);
  for (const auto& o : out) {
    ASSERT_EQ(1u, o.responses.size());
    EXPECT_EQ(ErrorCode::kAborted, o.responses[0].error->code());
    EXPECT_NE(std::string::npos,
              std::string(o.responses[0].error->what()).find("rank 1 shut down its engine"));
  }
  EXPECT_FALSE(w.ranks[0].all_shut_down());
  std::vector<Announcements> b(2);
  b[0].shutdown("tutti_finalize");
  w.cycle(b);
  EXPECT_TRUE(w.ranks[0].all_shut_down());
  EXPECT_TRUE(w.ranks[1].all_shut_down());
}

TEST(Negotiation, AMalformedMessageIsAClearError) {
  World w(2);
  std::vector<std::byte> junk{std::byte{0x7f}, std::byte{1}};
  std::vector<std::span<const std::byte>> views{junk, {}};
  EXPECT_THROW(w.ranks[0].process({}, views), Error);
}

TEST(RankList, CompressesRuns) {
  EXPECT_EQ("0-3,5,7,8", rank_list({0, 1, 2, 3, 5, 7, 8}));
  EXPECT_EQ("", rank_list({}));
}

}  // namespace
}  // namespace tutti::engine
