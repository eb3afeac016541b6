#include "report.hpp"

#include <fmt/format.h>

namespace tutti::bench {

std::string header_text(const BenchOptions& o, const std::vector<RankInfo>& ranks) {
  const bool factor = o.step_factor > 1;
  std::string out = fmt::format(
      "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {}({}) warmup iters: {} iters: {} agg "
      "iters: 1 "
      "validation: {} graph: 0\n",
      o.min_bytes, o.max_bytes, factor ? o.step_factor : o.step_bytes, factor ? "factor" : "bytes",
      o.warmup_iters, o.iters, o.check ? 1 : 0);
  out += "#\n# Using devices\n";
  for (const RankInfo& r : ranks)
    out += fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on {:>10} device  0 [cpu] {}\n", r.rank,
                       r.pid, r.host, "host memory");
  return out;
}

std::string column_header_text() {
  std::string out = "#\n";
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place "
      "         \n",
      "", "", "", "", "");
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  {:>6}  {:>6} "
      "{:>6}\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
      "busbw", "#wrong");
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  {:>6}  "
      "{:>5}\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      "");
  return out;
}

std::string format_time(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

namespace {
std::string measurement_text(const Measurement& m) {
  std::string wrong = m.wrong < 0 ? "N/A" : fmt::format("{}", m.wrong);
  return fmt::format("  {:>7}  {:6.2f}  {:6.2f}  {:>5}", format_time(m.time_us), m.algbw, m.busbw,
                     wrong);
}
}  // namespace

std::string row_text(const Row& r) {
  return fmt::format("{:12d}  {:12d}  {:>8}  {:>6}  {:6d}", r.size_bytes, r.count,
                     type_name(r.type), r.redop, r.root) +
         measurement_text(r.out_of_place) + measurement_text(r.in_place) + "\n";
}

std::string footer_text(int64_t out_of_bounds, double avg_busbw) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:g} \n#\n",
                     out_of_bounds, out_of_bounds == 0 ? "OK" : "FAILED", avg_busbw);
}

}  // namespace tutti::bench
