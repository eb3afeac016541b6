// nccl-tests' output format, line for line, so existing parsers and eyes read tutti-bench too.
#pragma once

#include <cstdint>
#include <string>
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

struct Row {
  uint64_t size_bytes = 0;
  uint64_t count = 0;
  DataType type = DataType::kFloat32;
  std::string redop;  // "sum", ..., or "none" for collectives without a reduction
  int root = -1;      // -1 for collectives without a root
  Measurement out_of_place;
  Measurement in_place;
};

std::string header_text(const BenchOptions& o, const std::vector<RankInfo>& ranks);
std::string column_header_text();
std::string row_text(const Row& row);
std::string footer_text(int64_t out_of_bounds, double avg_busbw);

// nccl-tests' time column: 2 decimals below 100us, 1 below 10ms, none above.
std::string format_time(double us);

}  // namespace tutti::bench
