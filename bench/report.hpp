// nccl-tests' output format, line for line, so existing parsers and eyes read tutti-bench too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_options.hpp"

namespace tutti::bench {

struct RankInfo {
  int rank = 0;
  int64_t pid = 0;
  std::string host;
};

struct Measurement {
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  int64_t wrong = -1;  // -1: not checked (prints N/A)
};

// A peer's allreduce at the same size (in place, or out of place), and how tutti's compares to it.
struct BaselineResult {
  bool supported = true;  // false: the peer has no such dtype/op; printed as N/A
  Measurement measurement;
  double ratio = 0;  // tutti busbw / peer busbw, median of the per-round ratios
};

struct Row {
  uint64_t size_bytes = 0;
  uint64_t count = 0;
  DataType type = DataType::kFloat32;
  std::string redop;  // "sum", ..., or "none" for collectives without a reduction
  int root = -1;      // -1 for collectives without a root
  Measurement out_of_place;
  Measurement in_place;
  std::optional<BaselineResult> baseline;  // only with --baseline; adds columns at the end
  // The peer out of place against tutti's out-of-place column (ratio = out-of-place busbw / the
  // peer's); after the in-place baseline's columns.
  std::optional<BaselineResult> baseline_out_of_place;
};

std::string header_text(const BenchOptions& o, const std::vector<RankInfo>& ranks);
// Without a baseline (""), exactly nccl-tests' columns; with one, its columns after them.
std::string column_header_text(std::string_view baseline = "");
std::string row_text(const Row& row);
// With --baseline: what runs and how it is timed, as '#' lines after the rank list.
std::string baseline_header_text(std::string_view name, const std::string& description, int rounds,
                                 int iters);

// --csv: a header line and one line per row; empty fields where there is nothing to say.
std::string csv_header_text();
std::string csv_row_text(const Row& row, int nranks, std::string_view baseline);
std::string footer_text(int64_t out_of_bounds, double avg_busbw);

// nccl-tests' time column: 2 decimals below 100us, 1 below 10ms, none above.
std::string format_time(double us);

}  // namespace tutti::bench
