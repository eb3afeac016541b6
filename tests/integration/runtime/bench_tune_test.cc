// tutti-bench --tune's pieces: the alpha/beta fit and the merge into the tuning file that the
// runtime parses (collectives/tune_file.hpp; the round trip is tune_roundtrip.sh).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "tune.hpp"

namespace tutti::bench {
namespace {

TEST(FitTuneLine, RecoversAnExactLine) {
  std::vector<TunePoint> points;
  for (double bytes : {8.0, 1024.0, 65536.0, 4194304.0})
    points.push_back({bytes, 20e-6 + bytes * 0.5e-9});
  auto line = fit_tune_line(points, {"ring", 4, 2, "auto"});
  ASSERT_TRUE(line);
  EXPECT_NEAR(line->alpha_us, 20, 1e-6);
  EXPECT_NEAR(line->beta_ns_per_byte, 0.5, 1e-9);
  EXPECT_EQ(line->algorithm, "ring");
}

TEST(FitTuneLine, ClampsNegativeTermsAndNeedsTwoSizes) {
  // Times that shrink with size are noise: no negative beta.
  auto flat = fit_tune_line(std::vector<TunePoint>{{8, 10e-6}, {1 << 20, 5e-6}}, {"hd", 2, 1});
  ASSERT_TRUE(flat);
  EXPECT_GE(flat->beta_ns_per_byte, 0);
  EXPECT_GT(flat->alpha_us, 0);
  auto origin = fit_tune_line(std::vector<TunePoint>{{8, 1e-9}, {1 << 20, 1e-3}}, {"hd", 2, 1});
  ASSERT_TRUE(origin);
  EXPECT_GE(origin->alpha_us, 0);
  EXPECT_FALSE(fit_tune_line(std::vector<TunePoint>{{8, 1e-6}}, {"hd", 2, 1}));
  EXPECT_FALSE(fit_tune_line(std::vector<TunePoint>{{8, 1e-6}, {8, 2e-6}}, {"hd", 2, 1}));
}

TEST(MergeTuneFile, ReplacesTheSameKeyAndKeepsOthers) {
  const std::vector<TunePoint> points = {{8, 1e-6}, {64, 2e-6}};
  std::string text = merge_tune_file("", {"ring", 4, 2, "auto", 10, 0.5}, points, "t.json");
  text = merge_tune_file(text, {"hier", 4, 2, "auto", 5, 0.7}, points, "t.json");
  text = merge_tune_file(text, {"ring", 4, 2, "auto", 12, 0.4}, points, "t.json");
  text = merge_tune_file(text, {"ring", 4, 2, "tcp", 30, 0.9}, points, "t.json");
  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["tutti_tune"], 1);
  ASSERT_EQ(doc["lines"].size(), 3u);
  int rings_auto = 0;
  for (const auto& j : doc["lines"]) {
    if (j["algorithm"] == "ring" && j["transport"] == "auto") {
      ++rings_auto;
      EXPECT_EQ(j["alpha_us"], 12);
    }
    EXPECT_EQ(j["points"].size(), 2u);
  }
  EXPECT_EQ(rings_auto, 1);
}

TEST(MergeTuneFile, RefusesAFileThatIsNotATuningFile) {
  EXPECT_THROW(merge_tune_file("not json", {"ring", 2, 1}, {}, "x.json"), std::runtime_error);
  EXPECT_THROW(merge_tune_file("{\"a\": 1}", {"ring", 2, 1}, {}, "x.json"), std::runtime_error);
}

}  // namespace
}  // namespace tutti::bench
