// Algorithm names and the cost model's choices (collectives/cost_model.hpp): which algorithm wins
// where, that a tuning line replaces the built-in prediction, the tuning file's errors, and the
// decision table. No timings: only the model's arithmetic is checked.
#include <gtest/gtest.h>

#include "collectives/collectives.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/placement.hpp"
#include "collectives/selection_cache.hpp"
#include "collectives/tune_file.hpp"
#include "core/error.hpp"
#include "unit/collectives/support/thread_ranks.hpp"

namespace tutti::collectives {
namespace {

TEST(Algorithm, NamesRoundTrip) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kHalvingDoubling, Algorithm::kShm, Algorithm::kHierarchical}) {
    EXPECT_EQ(parse_algorithm(to_string(a)), a);
  }
  EXPECT_EQ(parse_algorithm("HD"), Algorithm::kHalvingDoubling);
  EXPECT_EQ(parse_algorithm("Ring"), Algorithm::kRing);
  EXPECT_EQ(parse_algorithm("SHM"), Algorithm::kShm);
  EXPECT_EQ(parse_algorithm("hier"), Algorithm::kHierarchical);
}

TEST(Algorithm, UnknownNameIsAConfigErrorNamingIt) {
  try {
    parse_algorithm("butterfly");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("butterfly"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("TUTTI_ALGO"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("hier"), std::string::npos);
  }
  EXPECT_THROW(parse_algorithm(""), Error);
}

Placement one_host(int ranks, bool window) {
  Placement p;
  p.ranks = ranks;
  p.max_local = ranks;
  p.window = window;
  return p;
}

Placement hosts(int hosts, int per_host) {
  Placement p;
  p.ranks = hosts * per_host;
  p.hosts = hosts;
  p.max_local = per_host;
  p.flat = Link::kTcp;
  return p;
}

const CostModel kModel = CostModel::defaults();

TEST(CostModel, SmallMessagesTakeFewStepsLargeOnesTheRing) {
  // (On 2 ranks ring and halving-doubling are the same exchange, so the larger worlds tell.)
  for (int n : {4, 8, 16, 64}) {
    Placement p = hosts(n, 1);
    EXPECT_EQ(cheapest(kModel, 8, p), Algorithm::kHalvingDoubling) << n;
    EXPECT_EQ(cheapest(kModel, size_t{1} << 30, p), Algorithm::kRing) << n;
  }
}

TEST(CostModel, PickChangesWithSizeWhereTheTermsCross) {
  // Latency-bound at 8 B, bandwidth-bound at 1 GiB: on 8 flat ranks the pick must differ, and
  // predictions must grow with the size for every algorithm.
  Placement p = hosts(8, 1);
  EXPECT_NE(cheapest(kModel, 8, p), cheapest(kModel, size_t{1} << 30, p));
  for (Algorithm a : candidates(p))
    EXPECT_LT(predict(kModel, a, 8, p), predict(kModel, a, size_t{1} << 20, p)) << to_string(a);
}

TEST(CostModel, SharedMemoryWindowWinsOnOneHost) {
  for (int n : {2, 3, 4, 8})
    for (size_t bytes : {size_t{8}, size_t{4} << 10, size_t{1} << 20, size_t{256} << 20})
      EXPECT_EQ(cheapest(kModel, bytes, one_host(n, true)), Algorithm::kShm) << bytes << " " << n;
}

TEST(CostModel, CandidatesFollowThePlacement) {
  auto has = [](const Placement& p, Algorithm a) {
    auto c = candidates(p);
    return std::find(c.begin(), c.end(), a) != c.end();
  };
  EXPECT_FALSE(has(one_host(4, false), Algorithm::kShm));
  EXPECT_TRUE(has(one_host(4, true), Algorithm::kShm));
  EXPECT_FALSE(has(one_host(4, true), Algorithm::kHierarchical));  // one host: nothing to cross
  EXPECT_FALSE(has(hosts(4, 1), Algorithm::kHierarchical));        // one rank per host
  EXPECT_TRUE(has(hosts(2, 2), Algorithm::kHierarchical));
  EXPECT_EQ(candidates(one_host(1, false)), std::vector<Algorithm>{Algorithm::kRing});
  for (int n = 1; n <= 9; ++n)
    for (size_t bytes = 1; bytes < (size_t{1} << 34); bytes *= 8)
      EXPECT_NE(cheapest(kModel, bytes, hosts(n, 2)), Algorithm::kAuto);
}

TEST(CostModel, HierarchicalWinsWhenManyRanksShareFewHosts) {
  // 2 hosts x 4 ranks: flat algorithms cross TCP with every rank, hier only with the leaders.
  Placement p = hosts(2, 4);
  EXPECT_EQ(cheapest(kModel, 8, p), Algorithm::kHierarchical);
  EXPECT_LT(predict(kModel, Algorithm::kHierarchical, 8, p),
            predict(kModel, Algorithm::kRing, 8, p));
  // With the local link as slow as the cross link there is nothing to gain from the hierarchy
  // for large messages: it adds a full reduce and broadcast on top of the leaders' allreduce.
  Placement all_tcp = p;
  all_tcp.local = Link::kTcp;
  all_tcp.transport = "tcp";
  EXPECT_NE(cheapest(kModel, size_t{256} << 20, all_tcp), Algorithm::kHierarchical);
}

TEST(CostModel, TunedLineReplacesThePredictionForItsPlacementOnly) {
  Placement p = hosts(4, 1);
  CostModel tuned = kModel;
  tuned.tuned.push_back({Algorithm::kTree, 4, 4, "auto", 1e-9, 0});  // absurdly fast tree
  EXPECT_NE(cheapest(kModel, 1 << 20, p), Algorithm::kTree);
  EXPECT_EQ(cheapest(tuned, 1 << 20, p), Algorithm::kTree);
  EXPECT_DOUBLE_EQ(predict(tuned, Algorithm::kTree, 1 << 20, p), 1e-9);
  // Another world size, host count or transport keeps the built-in constants.
  EXPECT_EQ(cheapest(tuned, 1 << 20, hosts(8, 1)), cheapest(kModel, 1 << 20, hosts(8, 1)));
  Placement tcp = p;
  tcp.transport = "tcp";
  EXPECT_EQ(predict(tuned, Algorithm::kTree, 1 << 20, tcp),
            predict(kModel, Algorithm::kTree, 1 << 20, tcp));
}

TEST(TuneFile, ParsesLines) {
  auto lines = parse_tune_json(
      R"({"tutti_tune": 1, "lines": [{"algorithm": "hier", "ranks": 4, "hosts": 2,
          "transport": "auto", "alpha_us": 12.5, "beta_ns_per_byte": 0.25, "points": []}]})",
      "t.json");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].algorithm, Algorithm::kHierarchical);
  EXPECT_EQ(lines[0].ranks, 4);
  EXPECT_EQ(lines[0].hosts, 2);
  EXPECT_EQ(lines[0].transport, "auto");
  EXPECT_DOUBLE_EQ(lines[0].alpha_s, 12.5e-6);
  EXPECT_DOUBLE_EQ(lines[0].beta_s_per_byte, 0.25e-9);
}

class BadTuneFile : public ::testing::TestWithParam<const char*> {};

TEST_P(BadTuneFile, IsAConfigErrorNamingTheFile) {
  try {
    parse_tune_json(GetParam(), "/tmp/x.json");
    FAIL() << "accepted " << GetParam();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("/tmp/x.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TUTTI_TUNE_FILE"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadTuneFile,
    ::testing::Values("not json", "[]", R"({"lines": []})", R"({"tutti_tune": 1})",
                      R"({"tutti_tune": 1, "lines": [{"algorithm": "butterfly", "ranks": 2,
                          "hosts": 1, "alpha_us": 1, "beta_ns_per_byte": 1}]})",
                      R"({"tutti_tune": 1, "lines": [{"algorithm": "auto", "ranks": 2,
                          "hosts": 1, "alpha_us": 1, "beta_ns_per_byte": 1}]})",
                      R"({"tutti_tune": 1, "lines": [{"algorithm": "ring", "ranks": 2}]})",
                      R"({"tutti_tune": 1, "lines": [{"algorithm": "ring", "ranks": 2,
                          "hosts": 1, "alpha_us": -1, "beta_ns_per_byte": 1}]})"));

TEST(TuneFile, MissingFileIsAConfigErrorNamingIt) {
  try {
    read_tune_file("/nonexistent/tune.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tune.json"), std::string::npos);
  }
}

TEST(DecisionTable, ListsEverySizeCandidateAndPick) {
  Placement p = hosts(2, 2);
  const std::string table = decision_table(kModel, p);
  for (const char* word : {"ring", "tree", "hd", "hier", "pick", "4 ranks on 2 host(s)",
                           "built-in constants", "268435456"})
    EXPECT_NE(table.find(word), std::string::npos) << word << "\n" << table;
  EXPECT_EQ(table.find("shm "), std::string::npos) << table;  // no window on two hosts
  // One row per size 8 B .. 256 MiB, plus the title and the header.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 11);
  CostModel tuned = kModel;
  tuned.tuned.push_back({Algorithm::kRing, 4, 2, "auto", 1e-6, 1e-9});
  tuned.tuned_from = "my.json";
  const std::string marked = decision_table(tuned, p);
  EXPECT_NE(marked.find("my.json"), std::string::npos);
  EXPECT_NE(marked.find('*'), std::string::npos);  // tuned predictions are marked
}

TEST(DecisionTable, LoggedOncePerPlacement) {
  Placement p = hosts(3, 2);
  p.transport = "logged-once-test";
  EXPECT_TRUE(log_decision_table_once(kModel, p));
  EXPECT_FALSE(log_decision_table_once(kModel, p));
  p.ranks = 7;
  EXPECT_TRUE(log_decision_table_once(kModel, p));
}

// The per-call selection from a Context: host_of_rank and the transport make the placement, and
// explicit algorithms never reach the model.
TEST(SelectAllreduce, ReadsThePlacementFromTheContext) {
  auto failures = testing::run_ranks(4, [&](testing::Rank& rank) {
    const std::vector<int> two_hosts = {0, 0, 1, 1};
    Context ctx = rank.context();
    ctx.host_of_rank = two_hosts;
    Placement p = placement_of(ctx);
    EXPECT_EQ(p.ranks, 4);
    EXPECT_EQ(p.hosts, 2);
    EXPECT_EQ(p.max_local, 2);
    EXPECT_FALSE(p.window);
    EXPECT_EQ(select_allreduce(ctx, 8), cheapest(CostModel::defaults(), 8, p));
    Context flat = rank.context();
    EXPECT_EQ(placement_of(flat).hosts, 1);
    EXPECT_NE(select_allreduce(flat, 8), Algorithm::kHierarchical);
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

// A communicator's SelectionCache: the placement is read once and the answer for every size is
// the model's, whatever order the sizes come in.
TEST(SelectAllreduce, CachedSelectionAnswersLikeTheModel) {
  auto failures = testing::run_ranks(4, [&](testing::Rank& rank) {
    const std::vector<int> two_hosts = {0, 0, 1, 1};
    SelectionCache cache;
    Context ctx = rank.context();
    ctx.host_of_rank = two_hosts;
    ctx.selection = &cache;
    const Placement p = placement_of(ctx);
    for (size_t bytes : {size_t{8}, size_t{8}, size_t{1} << 20, size_t{8}, size_t{256} << 20,
                         size_t{256} << 20, size_t{4096}}) {
      EXPECT_EQ(select_allreduce(ctx, bytes), cheapest(CostModel::defaults(), bytes, p)) << bytes;
      EXPECT_EQ(cache.last_bytes, bytes);
    }
    ASSERT_TRUE(cache.placement.has_value());
    EXPECT_EQ(cache.placement->hosts, 2);
    EXPECT_EQ(cache.placement->max_local, 2);
    // The cached placement is what answers: a context with other hosts but the same cache keeps
    // the first placement (a communicator's placement never changes).
    Context flat = rank.context();
    flat.selection = &cache;
    EXPECT_EQ(select_allreduce(flat, 12345), cheapest(CostModel::defaults(), 12345, p));
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

}  // namespace
}  // namespace tutti::collectives
