// What `auto` picks (collectives/cost_model.hpp, select.cc), checked against expectations worked
// out by hand from the documented policy, never against the model's own output:
// docs/ARCHITECTURE.md
// ("Selection": latency terms as steps x alpha, byte terms as bytes moved x beta and reduced x
// gamma, the cheapest candidate wins, a tuning line replaces its algorithm's prediction, an
// explicit algorithm bypasses the model) and the constants of docs/PERFORMANCE.md ("Selection").
// Then properties any sane policy keeps (each algorithm wins one range of sizes, more ranks move
// the crossover up, bigger messages never cost less), the override by an explicit algorithm (what
// TUTTI_ALGO names; api/options_test checks the name), and the override by a tuning file.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collectives/allreduce_registry.hpp"
#include "collectives/collectives.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/placement.hpp"
#include "collectives/selection_cache.hpp"
#include "collectives/tune_file.hpp"
#include "core/error.hpp"
#include "transport/call_signature.hpp"
#include "unit/collectives/support/thread_ranks.hpp"

namespace tutti::collectives {
namespace {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;
constexpr size_t GiB = 1024 * MiB;

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

// Every rank on one host: shared-memory channels, and a LocalWindow unless `window` is false
// (TUTTI_SHM_WINDOW_BYTES=0).
Placement one_host(int ranks, bool window) {
  Placement p;
  p.ranks = ranks;
  p.max_local = ranks;
  p.window = window;
  return p;
}

// `per_host` ranks on each of `hosts` hosts: TCP between hosts, shared memory on each host (or TCP
// there too with TUTTI_TRANSPORT=tcp).
Placement hosts(int hosts, int per_host, bool tcp_on_host = false) {
  Placement p;
  p.ranks = hosts * per_host;
  p.hosts = hosts;
  p.max_local = per_host;
  p.flat = Link::kTcp;
  if (tcp_on_host) {
    p.local = Link::kTcp;
    p.transport = "tcp";
  }
  return p;
}

const CostModel kModel = CostModel::defaults();

struct Expected {
  const char* placement;  // for messages
  Placement p;
  size_t bytes;
  Algorithm pick;
};

std::string describe(const Expected& e) {
  return std::string(e.placement) + ", " + std::to_string(e.bytes) + " B";
}

// The constants (docs/PERFORMANCE.md): shm channel alpha 0.8 us, beta 0.25 ns/B; tcp 6 us,
// 0.30 ns/B; window 0.3 us, 0.05 ns/B; reduce gamma 0.07 ns/B; hier's three hand-offs cost a flat
// alpha each. Times below in us with B in bytes; "ring 4.8 + 0.375 B/1000" is 4.8 us plus 0.375 ns
// per byte. n ranks: ring 2(n-1) alpha + (n-1)/n B (beta + max(beta, gamma)); hd (n a power of
// two) 2 log2(n) alpha + (n-1)/n B (2 beta + gamma); tree 2 ceil(log2(n+1)) alpha + more than
// 2 B beta; shm (window) 2 alpha_w per chunk + B beta_w + (n-1)/n B (gamma + beta_w).
const Expected kTable[] = {
    // One host with a window: shm everywhere. 8 B: 0.6 us against at least 2 x 0.8 us for any
    // channel algorithm; per byte at most 0.05 + 0.12 = 0.17 ns against ring's 2(n-1)/n 0.25 >=
    // 0.25.
    {"1 host x 2, window", one_host(2, true), 8, Algorithm::kShm},
    {"1 host x 2, window", one_host(2, true), 256 * MiB, Algorithm::kShm},
    {"1 host x 4, window", one_host(4, true), 8, Algorithm::kShm},
    {"1 host x 4, window", one_host(4, true), 8 * KiB, Algorithm::kShm},
    {"1 host x 4, window", one_host(4, true), 8 * KiB + 1, Algorithm::kShm},
    {"1 host x 4, window", one_host(4, true), 1 * MiB, Algorithm::kShm},
    {"1 host x 8, window", one_host(8, true), 256 * MiB, Algorithm::kShm},
    // Two ranks: ring = 2 alpha + B beta, hd the same plus B/2 gamma, tree 4 alpha: ring always.
    {"1 host x 2, no window", one_host(2, false), 8, Algorithm::kRing},
    {"1 host x 2, no window", one_host(2, false), 1 * GiB, Algorithm::kRing},
    {"2 hosts x 1", hosts(2, 1), 8, Algorithm::kRing},
    {"2 hosts x 1", hosts(2, 1), 64 * MiB, Algorithm::kRing},
    // Three ranks: hd folds the third rank in (2 more alphas, 2 B beta + B gamma), so it has
    // ring's 4 alphas and more bytes: ring always.
    {"3 hosts x 1", hosts(3, 1), 8, Algorithm::kRing},
    {"3 hosts x 1", hosts(3, 1), 1 * MiB, Algorithm::kRing},
    // 4 ranks on shm channels: hd 3.2 + 0.4275 B/1000, ring 4.8 + 0.375 B/1000; equal at
    // 1.6 us / 0.0525 ns = 30476 B.
    {"1 host x 4, no window", one_host(4, false), 8, Algorithm::kHalvingDoubling},
    {"1 host x 4, no window", one_host(4, false), 29 * KiB, Algorithm::kHalvingDoubling},
    {"1 host x 4, no window", one_host(4, false), 30 * KiB, Algorithm::kRing},
    {"1 host x 4, no window", one_host(4, false), 256 * MiB, Algorithm::kRing},
    // 8 ranks on shm channels: hd 4.8 + 0.49875 B/1000, ring 11.2 + 0.4375 B/1000; equal at
    // 6.4 us / 0.06125 ns = 104490 B.
    {"1 host x 8, no window", one_host(8, false), 100 * KiB, Algorithm::kHalvingDoubling},
    {"1 host x 8, no window", one_host(8, false), 104 * KiB, Algorithm::kRing},
    // 4 ranks over TCP: hd 24 + 0.5025 B/1000, ring 36 + 0.45 B/1000; equal at
    // 12 us / 0.0525 ns = 228571 B (223.2 KiB).
    {"4 hosts x 1", hosts(4, 1), 8, Algorithm::kHalvingDoubling},
    {"4 hosts x 1", hosts(4, 1), 220 * KiB, Algorithm::kHalvingDoubling},
    {"4 hosts x 1", hosts(4, 1), 224 * KiB, Algorithm::kRing},
    {"4 hosts x 1", hosts(4, 1), 1 * GiB, Algorithm::kRing},
    // 2 hosts x 2 (PERFORMANCE.md: "hd up to 32 KiB, ring above" on its size grid): hd and ring as
    // for 4 hosts x 1; hier = 0.8 + 0.8 (on-host reduce and broadcast) + 18 (hand-offs) + 12 (the
    // leaders' 2-rank ring) = 31.6 us at 8 B, above hd's 24, and grows faster: never picked.
    {"2 hosts x 2", hosts(2, 2), 8, Algorithm::kHalvingDoubling},
    {"2 hosts x 2", hosts(2, 2), 32 * KiB, Algorithm::kHalvingDoubling},
    {"2 hosts x 2", hosts(2, 2), 220 * KiB, Algorithm::kHalvingDoubling},
    {"2 hosts x 2", hosts(2, 2), 224 * KiB, Algorithm::kRing},
    {"2 hosts x 2", hosts(2, 2), 512 * KiB, Algorithm::kRing},
    // 8 ranks over TCP: hd 36 + 0.58625 B/1000, ring 84 + 0.525 B/1000; equal at
    // 48 us / 0.06125 ns = 783673 B (765.3 KiB).
    {"8 hosts x 1", hosts(8, 1), 8, Algorithm::kHalvingDoubling},
    {"8 hosts x 1", hosts(8, 1), 764 * KiB, Algorithm::kHalvingDoubling},
    {"8 hosts x 1", hosts(8, 1), 768 * KiB, Algorithm::kRing},
    // 2 hosts x 4: hier (several ranks share each host) = on-host chain reduce 3 x 0.8 +
    // B 1.0/1000,
    // binomial broadcast 2 x 0.8 + B 0.5/1000, hand-offs 18, leaders' 2-rank ring 12 + B 0.3/1000:
    // 34 + 1.8 B/1000 against hd's 36 + 0.58625 B/1000; equal at 2 us / 1.21375 ns = 1648 B. From
    // there on as 8 hosts x 1.
    {"2 hosts x 4", hosts(2, 4), 8, Algorithm::kHierarchical},
    {"2 hosts x 4", hosts(2, 4), 1 * KiB, Algorithm::kHierarchical},
    {"2 hosts x 4", hosts(2, 4), 2 * KiB, Algorithm::kHalvingDoubling},
    {"2 hosts x 4", hosts(2, 4), 764 * KiB, Algorithm::kHalvingDoubling},
    {"2 hosts x 4", hosts(2, 4), 768 * KiB, Algorithm::kRing},
    // The same with TUTTI_TRANSPORT=tcp: hier's on-host steps cost 6 us each (3 + 2 + the 3
    // hand-offs + the leaders' 2 = 60 us at 8 B, above hd's 36): never hier.
    {"2 hosts x 4, tcp on host", hosts(2, 4, true), 8, Algorithm::kHalvingDoubling},
    {"2 hosts x 4, tcp on host", hosts(2, 4, true), 6 * KiB, Algorithm::kHalvingDoubling},
    {"2 hosts x 4, tcp on host", hosts(2, 4, true), 768 * KiB, Algorithm::kRing},
    // One rank: nothing to move; ring is the only candidate.
    {"1 rank", one_host(1, false), 8, Algorithm::kRing},
    {"1 rank", one_host(1, true), 1 * MiB, Algorithm::kRing},
};

// halving-doubling's own choice between its variants, which every rank makes alike from the
// placement (times in us with B in bytes, as in the table below). Doubling exchanges whole
// vectors: log2(p) (alpha + B (beta + gamma)).
TEST(Selection, HalvingDoublingExchangesWholeVectorsWhileTheyAreCheaper) {
  const CostModel m = CostModel::defaults();
  // 4 ranks on shm channels: doubling 1.6 + 0.64 B/1000 against halving 3.2 + 0.4275 B/1000,
  // equal at 7529 B.
  EXPECT_TRUE(recursive_doubling_pays(m, 4, 4, one_host(4, false)));
  EXPECT_TRUE(recursive_doubling_pays(m, 1792, 4, one_host(4, false)));   // 7168 B
  EXPECT_FALSE(recursive_doubling_pays(m, 2048, 4, one_host(4, false)));  // 8192 B
  // Fewer elements than ranks: halving, which skips the empty blocks' messages.
  EXPECT_FALSE(recursive_doubling_pays(m, 3, 4, one_host(4, false)));
  EXPECT_FALSE(recursive_doubling_pays(m, 2, 4, hosts(8, 1)));
  EXPECT_TRUE(recursive_doubling_pays(m, 8, 4, hosts(8, 1)));
  EXPECT_FALSE(recursive_doubling_pays(m, 1 << 18, 4, hosts(8, 1)));
  // Two ranks over TCP: one whole exchange against two of halves, until reducing all of it
  // rather than half costs more than the latency saved: 2 alpha / gamma = 171 KB.
  EXPECT_TRUE(recursive_doubling_pays(m, 40 * 1024, 4, hosts(2, 1)));   // 160 KiB
  EXPECT_FALSE(recursive_doubling_pays(m, 48 * 1024, 4, hosts(2, 1)));  // 192 KiB
  // Three ranks fold into two first; the third's element count still counts against p = 2.
  EXPECT_TRUE(recursive_doubling_pays(m, 2, 4, hosts(3, 1)));
}

TEST(Selection, PicksTheHandWorkedTable) {
  for (const Expected& e : kTable) EXPECT_EQ(cheapest(kModel, e.bytes, e.p), e.pick) << describe(e);
}

// `per_host` ranks on each of `pods` pods of one machine with `cpus` CPUs (cpu_share.hpp).
Placement pods(int pods, int per_host, int cpus) {
  Placement p = hosts(pods, per_host);
  p.cpu_share = std::max(1.0, static_cast<double>(pods * per_host) / cpus);
  p.leaders_cpu_share = std::max(1.0, static_cast<double>(pods) / cpus);
  return p;
}

// Pods of one 2-vCPU machine, 2 ranks each (docs/PERFORMANCE.md, "Scale across pods", where hier
// was fastest in 5 of 6 cells and 2% behind the ring in the sixth, 8 ranks at 64 MiB). TCP costs
// scale by the ranks per CPU. 8 ranks (4 per CPU, leaders 2): hd 6 x 24 = 144 us at 8 B; hier =
// 0.8 + 0.8 + 3 x 24 + the leaders' hd of 4 x 12 = 122 us. 16 ranks (8 per CPU, leaders 4): hd
// 8 x 48 = 384, hier 1.6 + 144 + 6 x 24 = 290. At 1 MiB the flat algorithms' bytes cost 4 or 8
// times theirs alone, hier's cross-host phase 2 or 4 times, on half the ranks' TCP steps: hier.
// 4 ranks in 2 pods (2 per CPU, leaders 1): hd 4 x 12 = 48 us, hier 1.6 + 36 + 12 = 49.6: hd, as
// measured (hd 36 us, hier 56).
TEST(Selection, PodsOfOneMachineTakeHierWhereTheyCrowdItsCpus) {
  for (size_t bytes : {size_t{8}, 1 * MiB, 64 * MiB}) {
    EXPECT_EQ(cheapest(kModel, bytes, pods(4, 2, 2)), Algorithm::kHierarchical) << bytes;
    EXPECT_EQ(cheapest(kModel, bytes, pods(8, 2, 2)), Algorithm::kHierarchical) << bytes;
    // The same hosts, each on a machine of its own: the built-in prices as before.
    EXPECT_EQ(cheapest(kModel, bytes, hosts(8, 2)), cheapest(kModel, bytes, pods(8, 2, 1000)));
  }
  EXPECT_EQ(cheapest(kModel, 8, hosts(8, 2)), Algorithm::kHalvingDoubling);
  EXPECT_EQ(cheapest(kModel, 1 * MiB, hosts(4, 2)), Algorithm::kRing);
  EXPECT_EQ(cheapest(kModel, 8, pods(2, 2, 2)), Algorithm::kHalvingDoubling);
  EXPECT_NEAR(predict(kModel, Algorithm::kHalvingDoubling, 8, pods(4, 2, 2)) * 1e6, 144, 0.5);
  EXPECT_NEAR(predict(kModel, Algorithm::kHierarchical, 8, pods(4, 2, 2)) * 1e6, 122, 0.5);
}

// Crowding the CPUs never makes anything cheaper, and leaves a placement without TCP alone.
TEST(Selection, MoreRanksPerCpuNeverMakeACallCheaper) {
  for (const Placement& base : {hosts(4, 2), hosts(2, 4, true), hosts(3, 1), one_host(4, false)})
    for (Algorithm a : candidates(base))
      for (size_t bytes : {size_t{8}, 64 * KiB, 16 * MiB}) {
        Placement crowded = base;
        crowded.cpu_share = 3;
        crowded.leaders_cpu_share = 2;
        const double before = predict(kModel, a, bytes, base);
        const double after = predict(kModel, a, bytes, crowded);
        if (base.flat == Link::kShm && base.local == Link::kShm)
          EXPECT_EQ(after, before) << to_string(a) << " " << bytes;
        else
          EXPECT_GT(after, before) << to_string(a) << " " << bytes;
      }
}

TEST(Selection, CandidatesFollowThePlacement) {
  // ring, tree, hd always (more than one rank); shm with a window; hier with several hosts and
  // some host holding several ranks.
  using V = std::vector<Algorithm>;
  const Algorithm ring = Algorithm::kRing, tree = Algorithm::kTree,
                  hd = Algorithm::kHalvingDoubling, shm = Algorithm::kShm,
                  hier = Algorithm::kHierarchical;
  EXPECT_EQ(candidates(one_host(1, true)), V{ring});
  EXPECT_EQ(candidates(one_host(4, false)), (V{ring, tree, hd}));
  EXPECT_EQ(candidates(one_host(4, true)), (V{ring, tree, hd, shm}));
  EXPECT_EQ(candidates(hosts(4, 1)), (V{ring, tree, hd}));
  EXPECT_EQ(candidates(hosts(2, 2)), (V{ring, tree, hd, hier}));
  Placement uneven = hosts(2, 1);  // 3 ranks: 2 on one host, 1 on the other
  uneven.ranks = 3;
  uneven.max_local = 2;
  EXPECT_EQ(candidates(uneven), (V{ring, tree, hd, hier}));
}

// The placements the properties sweep: 1-4 hosts, 1-16 ranks per host, window or not on one host,
// shm or tcp on the hosts.
std::vector<Placement> swept_placements() {
  std::vector<Placement> out;
  for (int per_host = 1; per_host <= 16; ++per_host) {
    out.push_back(one_host(per_host, true));
    out.push_back(one_host(per_host, false));
    for (int h = 2; h <= 4; ++h) {
      out.push_back(hosts(h, per_host));
      out.push_back(hosts(h, per_host, true));
    }
  }
  return out;
}

std::string describe(const Placement& p) {
  return std::to_string(p.ranks) + " ranks on " + std::to_string(p.hosts) + " host(s), " +
         (p.window ? "window, " : "") + "on-host link " + std::string(to_string(p.local));
}

// Sizes from 1 B to 4 GiB, each about 10% above the last.
std::vector<size_t> swept_sizes() {
  std::vector<size_t> out;
  for (size_t b = 1; b <= 4 * GiB; b = b + b / 10 + 1) out.push_back(b);
  return out;
}

// Latency terms lose to byte terms as messages grow, and never win back: once the pick leaves an
// algorithm for a larger size it never returns to it.
TEST(Selection, EachAlgorithmWinsOneRangeOfSizes) {
  for (const Placement& p : swept_placements()) {
    std::vector<Algorithm> left;
    Algorithm current = cheapest(kModel, 1, p);
    for (size_t bytes : swept_sizes()) {
      Algorithm pick = cheapest(kModel, bytes, p);
      if (pick == current) continue;
      left.push_back(current);
      EXPECT_EQ(std::find(left.begin(), left.end(), pick), left.end())
          << describe(p) << ": " << to_string(pick) << " wins again at " << bytes << " B";
      current = pick;
    }
  }
}

// Without a window, the largest messages go around the ring (it moves the fewest bytes per rank:
// 2 (n-1)/n B); with one, through the window.
TEST(Selection, LargeMessagesTakeTheRingOrTheWindow) {
  for (const Placement& p : swept_placements())
    EXPECT_EQ(cheapest(kModel, 4 * GiB, p),
              p.window && p.ranks > 1 ? Algorithm::kShm : Algorithm::kRing)
        << describe(p);
}

// The first swept size where the ring wins, on n ranks that each have a host.
size_t ring_from(int n) {
  for (size_t bytes : swept_sizes())
    if (cheapest(kModel, bytes, hosts(n, 1)) == Algorithm::kRing) return bytes;
  return 0;
}

// Ring's steps grow as 2(n-1), hd's as 2 log2(n): the more ranks, the larger the message must be
// before the ring's bandwidth pays for its latency.
TEST(Selection, MoreRanksMoveTheRingCrossoverUp) {
  const size_t at4 = ring_from(4), at8 = ring_from(8), at16 = ring_from(16), at32 = ring_from(32);
  EXPECT_GT(at4, 0u);
  EXPECT_LT(at4, at8);
  EXPECT_LT(at8, at16);
  EXPECT_LT(at16, at32);
}

// A bigger message never takes less time, whichever algorithm carries it.
TEST(Selection, PredictionsGrowWithTheSize) {
  const std::vector<size_t> sizes = swept_sizes();
  for (const Placement& p : swept_placements())
    for (Algorithm a : candidates(p))
      for (size_t i = 1; i < sizes.size(); ++i)
        ASSERT_LE(predict(kModel, a, sizes[i - 1], p), predict(kModel, a, sizes[i], p))
            << describe(p) << ", " << to_string(a) << " at " << sizes[i] << " B";
}

// A tuning file, written as `tutti-bench --tune` writes it and read as TUTTI_TUNE_FILE is.
class TuningFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }

  CostModel with(const std::string& lines) {
    {
      std::ofstream out(path_);
      out << R"({"tutti_tune": 1, "lines": [)" << lines << "]}";
    }
    CostModel m = kModel;
    m.tuned = read_tune_file(path_.string());
    m.tuned_from = path_.string();
    return m;
  }

  static std::string line(const char* algorithm, int ranks, int hosts, const char* transport,
                          double alpha_us, double beta_ns_per_byte) {
    return std::string(R"({"algorithm": ")") + algorithm + R"(", "ranks": )" +
           std::to_string(ranks) + R"(, "hosts": )" + std::to_string(hosts) +
           R"(, "transport": ")" + transport + R"(", "alpha_us": )" + std::to_string(alpha_us) +
           R"(, "beta_ns_per_byte": )" + std::to_string(beta_ns_per_byte) + R"(, "points": []})";
  }

 private:
  std::filesystem::path path_ = std::filesystem::temp_directory_path() /
                                ("tutti-select-test-" + std::to_string(::getpid()) + ".json");
};

TEST_F(TuningFile, AFastLineWinsForItsPlacementOnly) {
  // On 2 hosts x 2 the table says hd at 8 B and ring at 1 MiB; a measured tree of 1 us flat
  // beats both (hd 24 us, ring 36 us + 0.45 ns/B).
  CostModel tuned = with(line("tree", 4, 2, "auto", 1.0, 0.0));
  EXPECT_EQ(cheapest(tuned, 8, hosts(2, 2)), Algorithm::kTree);
  EXPECT_EQ(cheapest(tuned, 1 * MiB, hosts(2, 2)), Algorithm::kTree);
  EXPECT_DOUBLE_EQ(predict(tuned, Algorithm::kTree, 1 * MiB, hosts(2, 2)), 1e-6);
  // Another host count, world size or transport keeps the built-in constants: the table's picks.
  EXPECT_EQ(cheapest(tuned, 8, hosts(4, 1)), Algorithm::kHalvingDoubling);
  EXPECT_EQ(cheapest(tuned, 1 * MiB, hosts(4, 1)), Algorithm::kRing);
  EXPECT_EQ(cheapest(tuned, 8, hosts(2, 4)), Algorithm::kHierarchical);
  EXPECT_EQ(cheapest(tuned, 8, hosts(2, 2, true)), Algorithm::kHalvingDoubling);
}

TEST_F(TuningFile, ASlowLineForThePickHandsItToTheRunnerUp) {
  // hd measured at 1 s on 2 hosts x 2: at 8 B the runner-up by the constants is hier (25.6 us)
  // before ring (36 us) and tree (6 x 6 us and more); at 1 MiB the ring keeps it.
  CostModel tuned = with(line("hd", 4, 2, "auto", 1e6, 0.0));
  EXPECT_EQ(cheapest(tuned, 8, hosts(2, 2)), Algorithm::kHierarchical);
  EXPECT_EQ(cheapest(tuned, 1 * MiB, hosts(2, 2)), Algorithm::kRing);
}

TEST_F(TuningFile, LinesOfSeveralPlacementsEachApplyToTheirOwn) {
  CostModel tuned =
      with(line("tree", 8, 8, "auto", 1.0, 0.0) + "," + line("ring", 4, 4, "auto", 1.0, 0.0) + "," +
           line("hier", 8, 2, "tcp", 1.0, 0.0));
  EXPECT_EQ(cheapest(tuned, 8, hosts(8, 1)), Algorithm::kTree);
  EXPECT_EQ(cheapest(tuned, 8, hosts(4, 1)), Algorithm::kRing);
  EXPECT_EQ(cheapest(tuned, 8, hosts(2, 4, true)), Algorithm::kHierarchical);
  EXPECT_EQ(cheapest(tuned, 8, hosts(2, 4)), Algorithm::kHierarchical);  // the table's own pick
  EXPECT_EQ(cheapest(tuned, 64 * KiB, hosts(2, 4)), Algorithm::kHalvingDoubling);
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

// The last word of the table's row for `bytes`: its pick.
std::string row_pick(const std::string& table, size_t bytes) {
  const std::string bytes_column = fmt::format("\n{:>10} ", bytes);
  const size_t row = table.find(bytes_column);
  if (row == std::string::npos) return "no row for " + std::to_string(bytes);
  const size_t end = table.find('\n', row + 1);
  const size_t last_word = table.rfind(' ', end) + 1;
  return table.substr(last_word, end - last_word);
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
  // The picks of the hand-worked table for 2 hosts x 2: hd up to 223 KiB, ring above.
  EXPECT_EQ(row_pick(table, 8), "hd") << table;
  EXPECT_EQ(row_pick(table, 32 * KiB), "hd") << table;
  EXPECT_EQ(row_pick(table, 256 * KiB), "ring") << table;
  EXPECT_EQ(row_pick(table, 256 * MiB), "ring") << table;
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

// The ring's segment grows with the block only where its links are TCP, by an eighth of the block,
// never past the maximum, never below the configured segment, not at all with a maximum of 0, and
// not on 2 ranks.
TEST(RingSegment, GrowsWithTheBlockOnlyOverTcp) {
  auto failures = testing::run_ranks(3, [&](testing::Rank& rank) {
    Context ctx = rank.context();
    ctx.segment_bytes = 256 * KiB;
    ctx.tcp_segment_max_bytes = 4 * MiB;
    // In-process channels: not TCP.
    EXPECT_EQ(ring_segment_bytes(ctx, 64 * MiB), 256 * KiB);
    SelectionCache cache;
    cache.placement = hosts(3, 1);
    ASSERT_EQ(cache.placement->flat, Link::kTcp);
    ctx.selection = &cache;
    EXPECT_EQ(ring_segment_bytes(ctx, 1 * MiB), 256 * KiB);
    EXPECT_EQ(ring_segment_bytes(ctx, 2 * MiB + 8), 256 * KiB + 1);
    EXPECT_EQ(ring_segment_bytes(ctx, 16 * MiB), 2 * MiB);
    EXPECT_EQ(ring_segment_bytes(ctx, 256 * MiB), 4 * MiB);
    ctx.tcp_segment_max_bytes = 0;
    EXPECT_EQ(ring_segment_bytes(ctx, 256 * MiB), 256 * KiB);
    ctx.tcp_segment_max_bytes = 4 * MiB;
    ctx.segment_bytes = 8 * MiB;  // set above the maximum: kept
    EXPECT_EQ(ring_segment_bytes(ctx, 256 * MiB), 8 * MiB);
    ctx.segment_bytes = 256 * KiB;
    ctx.size = 2;
    EXPECT_EQ(ring_segment_bytes(ctx, 256 * MiB), 256 * KiB);
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

// The placement read off a Context: the in-process channels are not TCP, so the flat link is
// priced as shared memory; they have no window.
TEST(SelectAllreduce, ReadsThePlacementFromTheContext) {
  const std::vector<int> two_hosts = {0, 0, 1, 1};
  auto failures = testing::run_ranks(4, [&](testing::Rank& rank) {
    Context ctx = rank.context();
    ctx.host_of_rank = two_hosts;
    ctx.cpu_share = CpuShare{3, 1.5};
    Placement p = placement_of(ctx);
    EXPECT_EQ(p.cpu_share, 3);
    EXPECT_EQ(p.leaders_cpu_share, 1.5);
    EXPECT_EQ(p.ranks, 4);
    EXPECT_EQ(p.hosts, 2);
    EXPECT_EQ(p.max_local, 2);
    EXPECT_FALSE(p.window);
    EXPECT_EQ(p.flat, Link::kShm);
    Context flat = rank.context();  // no host_of_rank: one host
    Placement q = placement_of(flat);
    EXPECT_EQ(q.hosts, 1);
    EXPECT_EQ(q.max_local, 4);
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

// allreduce with kAuto runs what the table says for its placement (4 ranks on shm-priced channels
// with 2 pretend hosts: as 1 host x 4 without a window, hd up to 29 KiB, ring from 30 KiB; hier
// costs 4.8 us at 8 B against hd's 3.2). An explicit algorithm, which is what TUTTI_ALGO names,
// runs as named and never asks the model.
TEST(SelectAllreduce, AutoRunsTheTablePickAndANamedAlgorithmRunsAsNamed) {
  const std::vector<int> two_hosts = {0, 0, 1, 1};
  auto failures = testing::run_ranks(4, [&](testing::Rank& rank) {
    SelectionCache cache;
    auto run = [&](Algorithm algorithm, size_t bytes) {
      Context ctx = rank.context();
      ctx.host_of_rank = two_hosts;
      ctx.selection = &cache;
      std::vector<float> data(bytes / sizeof(float), static_cast<float>(rank.rank));
      allreduce(ctx, algorithm, data.data(), data.data(), data.size(), DataType::kFloat32,
                ReduceOp::kSum);
      EXPECT_EQ(data.front(), 0.0f + 1 + 2 + 3);
      EXPECT_EQ(data.back(), 0.0f + 1 + 2 + 3);
      return static_cast<Algorithm>(rank.transport.current_call().algorithm);
    };
    EXPECT_EQ(run(Algorithm::kAuto, 8), Algorithm::kHalvingDoubling);
    EXPECT_EQ(cache.lookups, 1u);
    EXPECT_EQ(run(Algorithm::kAuto, 29 * KiB), Algorithm::kHalvingDoubling);
    EXPECT_EQ(run(Algorithm::kAuto, 64 * KiB), Algorithm::kRing);
    EXPECT_EQ(cache.lookups, 3u);
    for (Algorithm named : {Algorithm::kTree, Algorithm::kRing, Algorithm::kHierarchical,
                            Algorithm::kHalvingDoubling}) {
      EXPECT_EQ(run(named, 8), named) << to_string(named);
      EXPECT_EQ(cache.lookups, 3u) << to_string(named) << " asked the table";
    }
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

// A communicator's SelectionCache: its placement, once known, is what answers, whatever the
// Context says. Here it holds 2 hosts x 4 over TCP, whose table is hier up to 1 KiB, hd to
// 764 KiB, then ring, while the Context itself (2 ranks, one host) would say ring everywhere.
TEST(SelectAllreduce, TheCachedPlacementAnswers) {
  auto failures = testing::run_ranks(2, [&](testing::Rank& rank) {
    SelectionCache cache;
    cache.placement = hosts(2, 4);
    Context ctx = rank.context();
    ctx.selection = &cache;
    for (auto [bytes, pick] :
         {std::pair{size_t{8}, Algorithm::kHierarchical},
          std::pair{8 * KiB, Algorithm::kHalvingDoubling},
          std::pair{size_t{8}, Algorithm::kHierarchical}, std::pair{1 * MiB, Algorithm::kRing},
          std::pair{1 * MiB, Algorithm::kRing}, std::pair{1 * KiB, Algorithm::kHierarchical}}) {
      EXPECT_EQ(select_allreduce(ctx, bytes), pick) << bytes;
      EXPECT_TRUE(cache.table.has_value());
    }
    Context uncached = rank.context();
    EXPECT_EQ(select_allreduce(uncached, 8), Algorithm::kRing);
  });
  EXPECT_EQ(testing::describe_failures(failures), "");
}

// A communicator's crossover table answers as the cost model would for every size: exactly at the
// sizes either side of each crossover, at the samples and between them, for the hand-worked
// placements, pods crowding CPUs and a tuning file's lines.
TEST(SelectionTable, AnswersAsTheModelAtEverySize) {
  std::vector<Placement> placements;
  for (const Expected& e : kTable) placements.push_back(e.p);
  placements.push_back(pods(4, 2, 2));
  placements.push_back(pods(8, 2, 2));
  placements.push_back(hosts(3, 3));
  CostModel tuned = kModel;
  tuned.tuned.push_back({Algorithm::kTree, 4, 1, "auto", 2e-6, 1e-9});
  for (const CostModel* model : {&kModel, static_cast<const CostModel*>(&tuned)}) {
    for (const Placement& p : placements) {
      const SelectionTable table = selection_table(*model, p);
      ASSERT_FALSE(table.upto.empty());
      EXPECT_EQ(table.upto.back().first, SIZE_MAX);
      for (size_t i = 0; i + 1 < table.upto.size(); ++i) {
        const size_t last = table.upto[i].first;
        EXPECT_NE(table.upto[i].second, table.upto[i + 1].second) << "two runs of one pick";
        EXPECT_EQ(cheapest(*model, last, p), table.upto[i].second) << last;
        EXPECT_EQ(cheapest(*model, last + 1, p), table.upto[i + 1].second) << last + 1;
      }
      uint64_t x = 88172645463325252ull;  // xorshift: sizes spread over every power of two
      for (int i = 0; i < 4000; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const size_t bytes = (x >> (x % 37 + 24)) + 1;
        EXPECT_EQ(table.pick(bytes), cheapest(*model, bytes, p))
            << bytes << " B on " << p.ranks << " ranks, " << p.hosts << " hosts";
      }
    }
  }
}

// The registry's last entry is the device path: chosen by where the buffers live, so neither a
// TUTTI_ALGO name nor selection's candidate, and it applies to no host placement.
TEST(AllreduceRegistry, TheDevicePathIsTheLastEntryAndNoHostChoice) {
  const AllreduceAlgorithm& device = device_allreduce();
  const auto host = allreduce_algorithms();
  EXPECT_EQ(&device, host.data() + host.size()) << "right after the host algorithms";
  EXPECT_EQ(device.id, Algorithm::kAuto);
  EXPECT_EQ(device.name, "device");
  EXPECT_NE(device.run, nullptr);
  EXPECT_EQ(device.model_time, nullptr);
  EXPECT_FALSE(device.applies(hosts(1, 4)));
  EXPECT_FALSE(device.applies(hosts(2, 2)));
  EXPECT_THROW(parse_algorithm("device"), Error);
  for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{1} << 30})
    EXPECT_NE(cheapest(kModel, bytes, hosts(2, 2)), Algorithm::kAuto) << bytes;
}

// Every allreduce algorithm is one registry entry: the enum's order, TUTTI_ALGO's names (parsed
// back to the entry), a modeled time and a function to run; kAuto is the choice among them.
TEST(AllreduceRegistry, OneEntryPerAlgorithmInTheEnumsOrder) {
  int expected = 1;
  for (const AllreduceAlgorithm& a : allreduce_algorithms()) {
    EXPECT_EQ(static_cast<int>(a.id), expected++);
    EXPECT_EQ(parse_algorithm(a.name), a.id);
    EXPECT_EQ(to_string(a.id), a.name);
    EXPECT_EQ(find_allreduce(a.id), &a);
    EXPECT_NE(a.run, nullptr);
    EXPECT_GT(a.model_time(kModel, 8, hosts(2, 2)), 0) << a.name;
    // The transport names a call's algorithm in a mismatch's message by the same number.
    transport::CallSignature call{.kind = transport::CallKind::kAllreduce, .count = 1};
    call.algorithm = static_cast<uint8_t>(a.id);
    EXPECT_NE(call.describe().find(fmt::format(", {})", a.name)), std::string::npos)
        << call.describe();
  }
  EXPECT_EQ(find_allreduce(Algorithm::kAuto), nullptr);
  EXPECT_EQ(find_allreduce(static_cast<Algorithm>(expected)), nullptr);
  EXPECT_EQ(parse_algorithm("AUTO"), Algorithm::kAuto);
  try {
    parse_algorithm("butterfly");
    ADD_FAILURE() << "accepted butterfly";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("auto, ring, tree, hd, shm, hier"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tutti::collectives
