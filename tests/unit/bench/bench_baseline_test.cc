// tutti-bench's baseline pieces that need no running job: the interleaved pair statistics, the
// extra columns and CSV, the --baseline/--rounds/--csv options, and the missing-peer message.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "bench_options.hpp"
#include "device/device_buffers.hpp"
#include "pair_stats.hpp"
#include "report.hpp"

namespace tutti::bench {
namespace {

BenchParse parse(std::vector<std::string> args) {
  return parse_bench_options(args);
}

size_t fields(const std::string& line) {
  return static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
}

TEST(PairStats, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({3}), 3);
  EXPECT_EQ(median({5, 1, 3}), 3);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({7, 7, 1, 100, 7}), 7);
}

TEST(PairStats, RatioIsTheMedianOfPerRoundRatiosNotOfMedians) {
  // The machine slows down 4x in the middle rounds; both sides slow down together, so every
  // round says tutti is 2x faster. The ratio of the median times would say 1x.
  std::vector<double> ours{1, 4, 4, 4, 1};
  std::vector<double> base{2, 8, 8, 2, 2};
  PairSummary s = summarize_pairs(ours, base);
  EXPECT_EQ(s.ours_seconds, 4);
  EXPECT_EQ(s.base_seconds, 2);
  EXPECT_EQ(s.ratio, 2);
}

TEST(PairStats, SlowerThanBaselineIsBelowOneAndZeroTimesAreSkipped) {
  std::vector<double> ours{3, 0, 3};
  std::vector<double> base{1, 1, 1};
  PairSummary s = summarize_pairs(ours, base);
  EXPECT_NEAR(s.ratio, 1.0 / 3, 1e-12);
  EXPECT_EQ(summarize_pairs({}, {}).ratio, 0);
}

TEST(BaselineReport, NoBaselineKeepsNcclTestsColumnsByteForByte) {
  const std::string expected =
      "#\n"
      "#                                                              out-of-place                 "
      " "
      "     in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time "
      "  algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us) "
      " (GB/s)  (GB/s)       \n";
  EXPECT_EQ(column_header_text(), expected);
  EXPECT_EQ(column_header_text(""), expected);
}

TEST(BaselineReport, BaselineColumnsFollowNcclTestsOnes) {
  const std::string plain = column_header_text();
  const std::string with = column_header_text("mpi");
  EXPECT_NE(with.find("baseline: mpi"), std::string::npos) << with;
  EXPECT_NE(with.find("#wrong   ratio\n"), std::string::npos) << with;
  EXPECT_NE(with.find("mpi out of place"), std::string::npos) << with;
  EXPECT_NE(with.find("(x)\n"), std::string::npos) << with;
  // Every nccl-tests header line is kept as the start of the extended one.
  size_t start = 0;
  size_t wstart = 0;
  while (start < plain.size()) {
    size_t end = plain.find('\n', start);
    size_t wend = with.find('\n', wstart);
    ASSERT_NE(wend, std::string::npos);
    EXPECT_EQ(with.substr(wstart, end - start), plain.substr(start, end - start));
    start = end + 1;
    wstart = wend + 1;
  }
  std::string head = baseline_header_text("gloo", "Gloo 0.5.0 ring", 5, 20);
  EXPECT_NE(head.find("# Baseline gloo: Gloo 0.5.0 ring\n"), std::string::npos) << head;
  EXPECT_NE(head.find("5 rounds of 20 iterations"), std::string::npos) << head;
}

Row sample_row() {
  Row row;
  row.size_bytes = 1024;
  row.count = 256;
  row.redop = "sum";
  row.out_of_place = {12.345, 0.08, 0.12, 0};
  row.in_place = {10.0, 0.1, 0.15, 0};
  return row;
}

TEST(BaselineReport, RowAppendsBaselineAndRatio) {
  Row row = sample_row();
  const std::string plain = row_text(row);
  row.baseline = BaselineResult{true, {20.0, 0.05, 0.075, 0}, 2.0};
  const std::string with = row_text(row);
  ASSERT_EQ(with.substr(0, plain.size() - 1), plain.substr(0, plain.size() - 1));
  EXPECT_EQ(with.substr(plain.size() - 1), "    20.00    0.05    0.07      0    2.00\n");
  row.baseline = BaselineResult{false, {}, 0};
  EXPECT_EQ(row_text(row).substr(plain.size() - 1), "      N/A     N/A     N/A    N/A     N/A\n");
  // Out of place: its own block after the in-place one.
  row.baseline = BaselineResult{true, {20.0, 0.05, 0.075, 0}, 2.0};
  row.baseline_out_of_place = BaselineResult{true, {40.0, 0.03, 0.04, 0}, 0.5};
  EXPECT_EQ(row_text(row).substr(plain.size() - 1),
            "    20.00    0.05    0.07      0    2.00    40.00    0.03    0.04      0    0.50\n");
}

TEST(BaselineReport, CsvRowsMatchTheHeader) {
  const std::string header = csv_header_text();
  ASSERT_EQ(header.back(), '\n');
  EXPECT_EQ(header.rfind("size,count,type,redop,", 0), 0u);
  EXPECT_NE(header.find(",baseline,"), std::string::npos);
  EXPECT_NE(header.find(",ratio,"), std::string::npos);
  EXPECT_NE(header.find(",oop_ratio\n"), std::string::npos);
  Row row = sample_row();
  std::string none = csv_row_text(row, 2, "none");
  EXPECT_EQ(fields(none), fields(header)) << none;
  EXPECT_NE(none.find(",none,,,,,,,,,,\n"), std::string::npos) << none;
  row.baseline = BaselineResult{true, {20.0, 0.05, 0.075, 1}, 2.0};
  std::string with = csv_row_text(row, 2, "mpi");
  EXPECT_EQ(fields(with), fields(header)) << with;
  EXPECT_EQ(with.rfind("1024,256,float,sum,-1,2,12.345,", 0), 0u) << with;
  EXPECT_NE(with.find(",mpi,20.000,0.05,0.075,1,2,,,,,\n"), std::string::npos) << with;
  row.baseline_out_of_place = BaselineResult{true, {30.0, 0.04, 0.06, 0}, 0.5};
  std::string both = csv_row_text(row, 2, "mpi");
  EXPECT_EQ(fields(both), fields(header)) << both;
  EXPECT_NE(both.find(",mpi,20.000,0.05,0.075,1,2,30.000,0.04,0.06,0,0.5\n"), std::string::npos)
      << both;
  row.baseline_out_of_place.reset();
  row.baseline->measurement.busbw = 1.234567e-6;
  EXPECT_NE(csv_row_text(row, 2, "mpi").find(",1.23457e-06,1,"), std::string::npos);
  row.baseline = BaselineResult{false, {}, 0};
  EXPECT_EQ(fields(csv_row_text(row, 2, "gloo")), fields(header));
}

TEST(BaselineOptions, DefaultsToNoneWithFiveRounds) {
  BenchParse p = parse({"allreduce"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->baseline, BaselineKind::kNone);
  EXPECT_EQ(p.options->rounds, 5);
  EXPECT_TRUE(p.options->csv_path.empty());
}

TEST(BaselineOptions, CsvRoundsAndNone) {
  BenchParse p = parse({"allreduce", "--csv", "out.csv", "--rounds", "3", "--baseline", "none"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->csv_path, "out.csv");
  EXPECT_EQ(p.options->rounds, 3);
  EXPECT_EQ(p.options->baseline, BaselineKind::kNone);
}

TEST(BaselineOptions, RejectsWhatCannotWork) {
  for (auto args : std::vector<std::vector<std::string>>{{"allreduce", "--baseline", "rccl"},
                                                         {"allreduce", "--rounds", "0"},
                                                         {"broadcast", "--baseline", "gloo"},
                                                         {"allgather", "--baseline", "mpi"}}) {
    BenchParse p = parse(args);
    EXPECT_FALSE(p.options) << args[1];
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.message.find("tutti-bench: "), std::string::npos);
  }
  EXPECT_NE(parse({"broadcast", "--baseline", "gloo"}).message.find("allreduce only"),
            std::string::npos);
  EXPECT_NE(parse({"allreduce", "--baseline", "rccl"})
                .message.find("use mpi, gloo, nccl, inplace or none"),
            std::string::npos);
}

TEST(BaselineOptions, VersionListsTheBuiltPeers) {
  BenchParse p = parse({"--version"});
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_NE(p.message.find("\nbaselines: "), std::string::npos) << p.message;
  EXPECT_EQ(p.message.find("mpi") != std::string::npos, baseline_built(BaselineKind::kMpi));
  EXPECT_EQ(p.message.find("gloo") != std::string::npos, baseline_built(BaselineKind::kGloo));
}

class BaselineAvailability : public ::testing::TestWithParam<BaselineKind> {};

// Built in: accepted. Not built in: a usage error that says so and how to get it.
TEST_P(BaselineAvailability, AcceptedWhenBuiltElseExplained) {
  BaselineKind kind = GetParam();
  std::string name(baseline_name(kind));
  EXPECT_EQ(parse_baseline(name), kind);
  BenchParse p = parse({"allreduce", "--baseline", name});
  if (baseline_built(kind)) {
    ASSERT_TRUE(p.options) << p.message;
    EXPECT_EQ(p.options->baseline, kind);
    EXPECT_EQ(baseline_missing_reason(kind), "");
  } else {
    EXPECT_FALSE(p.options);
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.message.find("was built without"), std::string::npos) << p.message;
    EXPECT_NE(p.message.find("install-deps.sh"), std::string::npos) << p.message;
  }
  // The reason text exists for every peer, built or not, so the message never comes out empty.
  EXPECT_EQ(baseline_missing_reason(BaselineKind::kNone), "");
}

INSTANTIATE_TEST_SUITE_P(Peers, BaselineAvailability,
                         ::testing::Values(BaselineKind::kMpi, BaselineKind::kGloo,
                                           BaselineKind::kInPlace),
                         [](const auto& info) { return std::string(baseline_name(info.param)); });

// --device cuda and --baseline nccl: what a build without CUDA says, and the pairs of
// options that cannot go together in any build.
TEST(DeviceOptions, DeviceAndNcclBaseline) {
  BenchParse bad = parse({"allreduce", "--device", "gpu"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.message.find("use host or cuda"), std::string::npos) << bad.message;

  BenchParse host = parse({"allreduce", "--device", "host"});
  ASSERT_TRUE(host.options) << host.message;
  EXPECT_FALSE(host.options->device_cuda);

  BenchParse cuda = parse({"allreduce", "--device", "cuda"});
  BenchParse nccl = parse({"allreduce", "--device", "cuda", "--baseline", "nccl"});
  BenchParse alltoall = parse({"alltoall", "--device", "cuda"});
  BenchParse nccl_on_host = parse({"allreduce", "--baseline", "nccl"});
  EXPECT_EQ(nccl_on_host.exit_code, 2);
  if (cuda_built()) {
    ASSERT_TRUE(cuda.options) << cuda.message;
    EXPECT_TRUE(cuda.options->device_cuda);
    ASSERT_TRUE(nccl.options) << nccl.message;
    EXPECT_EQ(nccl.options->baseline, BaselineKind::kNccl);
    EXPECT_EQ(alltoall.exit_code, 2);
    EXPECT_NE(alltoall.message.find("not alltoall"), std::string::npos) << alltoall.message;
    EXPECT_NE(nccl_on_host.message.find("add --device cuda"), std::string::npos);
    BenchParse mpi = parse({"allreduce", "--device", "cuda", "--baseline", "mpi"});
    if (baseline_built(BaselineKind::kMpi)) {
      EXPECT_EQ(mpi.exit_code, 2);
      EXPECT_NE(mpi.message.find("--baseline nccl"), std::string::npos) << mpi.message;
    }
  } else {
    for (const BenchParse* p : {&cuda, &nccl, &alltoall}) {
      EXPECT_EQ(p->exit_code, 2);
      EXPECT_NE(p->message.find("TUTTI_WITH_CUDA"), std::string::npos) << p->message;
    }
    EXPECT_NE(nccl_on_host.message.find("TUTTI_WITH_CUDA"), std::string::npos);
  }
}

}  // namespace
}  // namespace tutti::bench
