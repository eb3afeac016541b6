// ElasticGrowth's rules against a real in-memory store and a stand-in for starting processes; the
// discovery script is a real sh script (a file that the test rewrites).
#include "launcher/elastic_growth.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/elastic_keys.hpp"
#include "bootstrap/memory_store.hpp"
#include "launcher/host_discovery.hpp"
#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

namespace keys = bootstrap::elastic_keys;

struct Started {
  int label;
  RankSlot slot;
  int size;
  std::vector<std::pair<std::string, std::string>> env;
  std::string get(const std::string& name) const {
    for (const auto& [n, v] : env)
      if (n == name) return v;
    return "";
  }
};

class ElasticGrowthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tutti-growth-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    list("a:2");
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  // What the discovery script prints from now on.
  void list(const std::string& hosts) { std::ofstream(dir_ + "/hosts") << hosts << "\n"; }
  std::unique_ptr<ElasticGrowth> growth(int max_np = 0, int blacklist_after = 1) {
    return std::make_unique<ElasticGrowth>(
        ElasticConfig{"cat " + dir_ + "/hosts | tr ' ' '\\n'", 0.0, max_np, blacklist_after}, "job",
        store_, std::vector<Member>{{0, "a"}, {1, "a"}},
        [this](int label, const RankSlot& slot, int size,
               const std::vector<std::pair<std::string, std::string>>& env) {
          started_.push_back(Started{label, slot, size, env});
        },
        [this](std::string line) { said_.push_back(std::move(line)); });
  }
  void form(int64_t epoch, int members) {
    for (int i = 0; i < members; ++i) store_.add(keys::formed(epoch), 1);
  }
  void arrive(int member) { store_.set(keys::arrived(member), "1"); }
  // One tick as the supervisor's loop makes them until the script run it started has ended (the
  // run is asynchronous; 5 s at most).
  void tick(ElasticGrowth& g) {
    const Deadline deadline = Deadline::after_seconds(5);
    g.tick();
    while (g.discovering() && !deadline.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      g.tick();
    }
    ASSERT_FALSE(g.discovering()) << "the discovery script never ended";
  }
  std::string members(int64_t epoch) {
    return store_.get(keys::members(epoch), Deadline::after_seconds(1));
  }

  std::string dir_;
  bootstrap::MemoryStore store_;
  std::vector<Started> started_;
  std::vector<std::string> said_;
};

TEST_F(ElasticGrowthTest, NewSlotsGetNewcomersPublishedOnceTheyArrived) {
  auto g = growth();
  EXPECT_EQ(members(0), "0,1");
  form(0, 2);
  tick(*g);
  EXPECT_TRUE(started_.empty());  // a:2 is full
  list("a:2 b:2");
  tick(*g);
  ASSERT_EQ(started_.size(), 2u);
  EXPECT_EQ(started_[0].label, 2);
  EXPECT_EQ(started_[0].slot.rank, 2);
  EXPECT_EQ(started_[0].slot.host, "b");
  EXPECT_EQ(started_[0].slot.local_rank, 0);
  EXPECT_EQ(started_[0].slot.cross_rank, 1);
  EXPECT_EQ(started_[1].slot.local_rank, 1);
  EXPECT_EQ(started_[0].size, 4);
  EXPECT_EQ(started_[0].get("TUTTI_ELASTIC_EPOCH"), "1");
  EXPECT_EQ(started_[0].get("TUTTI_MEMBER_ID"), "2");
  EXPECT_EQ(started_[0].get("TUTTI_JOB_ID"), "job-e1");
  EXPECT_EQ(started_[0].get("TUTTI_ELASTIC_JOB"), "job");
  tick(*g);  // nobody arrived: nothing published yet
  EXPECT_EQ(store_.add(std::string(keys::kEpoch), 0), 0);
  arrive(2);
  arrive(3);
  tick(*g);
  EXPECT_EQ(store_.add(std::string(keys::kEpoch), 0), 1);
  EXPECT_EQ(members(1), "0,1,2,3");
  EXPECT_EQ(g->members(), 4u);
  tick(*g);  // membership 1 not formed: no new growth even with more slots
  list("a:2 b:2 c:1");
  tick(*g);
  EXPECT_EQ(started_.size(), 2u);
  form(1, 4);
  tick(*g);
  ASSERT_EQ(started_.size(), 3u);
  EXPECT_EQ(started_[2].slot.host, "c");
}

// The supervisor's loop forwards the ranks' output between ticks: a slow script (kubectl against a
// busy API server) must not hold it. tick() starts the script and returns; a later tick takes the
// result.
TEST_F(ElasticGrowthTest, ASlowScriptNeverHoldsTheLoop) {
  auto g = std::make_unique<ElasticGrowth>(
      ElasticConfig{"sleep 1; echo a:2; echo b:1", 0.0, 0, 1}, "job", store_,
      std::vector<Member>{{0, "a"}, {1, "a"}},
      [this](int label, const RankSlot& slot, int size,
             const std::vector<std::pair<std::string, std::string>>& env) {
        started_.push_back(Started{label, slot, size, env});
      },
      [this](std::string line) { said_.push_back(std::move(line)); });
  form(0, 2);
  g->tick();
  EXPECT_TRUE(g->discovering()) << "tick() waited for the script";
  EXPECT_TRUE(started_.empty());
  tick(*g);
  ASSERT_EQ(started_.size(), 1u);
  EXPECT_EQ(started_[0].slot.host, "b");
}

TEST_F(ElasticGrowthTest, MaxNpBoundsTheGrowth) {
  auto g = growth(3);
  form(0, 2);
  list("a:2 b:4");
  tick(*g);
  EXPECT_EQ(started_.size(), 1u);
}

TEST_F(ElasticGrowthTest, ANewcomerThatDiesIsLeftOutAndItsHostBlacklisted) {
  auto g = growth();
  form(0, 2);
  list("a:2 b:2");
  tick(*g);
  ASSERT_EQ(started_.size(), 2u);
  g->on_exit(2, true);  // died before it arrived
  arrive(3);
  tick(*g);
  EXPECT_EQ(members(1), "0,1,3");
  ASSERT_FALSE(said_.empty());
  bool blacklisted = false;
  for (const auto& line : said_)
    blacklisted |= line.find("host b blacklisted") != std::string::npos;
  EXPECT_TRUE(blacklisted);
  form(1, 3);
  list("a:2 b:2 c:1");
  tick(*g);
  ASSERT_EQ(started_.size(), 3u);
  EXPECT_EQ(started_[2].slot.host, "c");  // b has a free slot but is blacklisted
}

// A membership whose members all met is said to have formed, once; a member that ends before all
// met makes it abandoned, once: its running members go back to the membership before it (less
// the dead one), its newcomers' ends blacklist nobody, and the next growth is a new membership.
TEST_F(ElasticGrowthTest, AMembershipFormsOrIsAbandonedOnce) {
  auto g = growth(0, 2);  // member 1's end must not blacklist host a for the next growth
  form(0, 2);
  list("a:2 b:2");
  tick(*g);
  arrive(2);
  arrive(3);
  tick(*g);
  ASSERT_EQ(members(1), "0,1,2,3");
  EXPECT_FALSE(store_.missing({keys::outcome(1)}).empty());  // undecided while they meet
  form(1, 3);
  g->on_exit(1, true);  // a running member ends before the fourth met
  EXPECT_EQ(store_.get(keys::outcome(1), Deadline::after_seconds(1)).rfind("abandoned: ", 0), 0u);
  EXPECT_EQ(g->members(), 1u);  // member 0: the membership before, less member 1
  g->on_exit(2, true);          // the newcomers end because it was abandoned
  g->on_exit(3, true);
  g->on_exit(2, true);  // (twice: their host would be blacklisted after 2 failures)
  for (const auto& line : said_) EXPECT_EQ(line.find("blacklisted"), std::string::npos) << line;
  // The next growth fills the free slots as membership 2, newcomers b's included.
  list("a:2 b:2");
  tick(*g);
  for (int id = 4; id < 7; ++id) arrive(id);
  tick(*g);
  EXPECT_EQ(members(2), "0,4,5,6");
  form(2, 4);
  tick(*g);
  EXPECT_EQ(store_.get(keys::outcome(2), Deadline::after_seconds(1)), "formed");
  g->on_exit(5, true);  // a death after it formed changes no outcome
  EXPECT_EQ(store_.get(keys::outcome(2), Deadline::after_seconds(1)), "formed");
}

TEST_F(ElasticGrowthTest, NoGrowthOnceAMemberFinished) {
  auto g = growth();
  form(0, 2);
  g->on_exit(1, false);
  list("a:2 b:2");
  tick(*g);
  EXPECT_TRUE(started_.empty());
}

TEST_F(ElasticGrowthTest, AFailingScriptIsSaidOnceAndChangesNothing) {
  auto g = growth();
  form(0, 2);
  std::ofstream(dir_ + "/hosts") << "a:2\nbad:host:x\n";
  tick(*g);
  tick(*g);
  EXPECT_TRUE(started_.empty());
  ASSERT_EQ(said_.size(), 1u);
  EXPECT_NE(said_[0].find("line 2"), std::string::npos) << said_[0];
}

TEST(HostDiscovery, ParsesHostsAndSlots) {
  hostfile::Hostfile h = parse_discovered("# comment\nnode-1:4\n\n  node-2 \n");
  ASSERT_EQ(h.hosts.size(), 2u);
  EXPECT_EQ(h.hosts[0].name, "node-1");
  EXPECT_EQ(h.hosts[0].slots, 4);
  EXPECT_EQ(h.hosts[1].slots, 1);
  EXPECT_THROW(parse_discovered("a:2\na:1\n"), Error);
  EXPECT_THROW(parse_discovered("a:zero\n"), Error);
}

TEST(HostDiscovery, AScriptThatFailsOrHangsIsAnError) {
  Discovery failed = discover_hosts("echo oops >&2; exit 4", 5);
  EXPECT_TRUE(failed.hosts.hosts.empty());
  EXPECT_NE(failed.error.find("oops"), std::string::npos) << failed.error;
  Discovery slow = discover_hosts("sleep 5", 0.2);
  EXPECT_NE(slow.error.find("did not finish"), std::string::npos) << slow.error;
  Discovery fine = discover_hosts("printf 'x:2\\ny\\n'", 5);
  EXPECT_TRUE(fine.error.empty()) << fine.error;
  EXPECT_EQ(fine.hosts.total_slots(), 3);
}

}  // namespace
}  // namespace tutti::launcher
