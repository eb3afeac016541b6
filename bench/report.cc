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

std::string column_header_text(std::string_view baseline) {
  // nccl-tests' lines end in spaces; the baseline's columns go where the newline was.
  std::string titles = fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place "
      "         ",
      "", "", "", "", "");
  std::string names = fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  {:>6}  {:>6} "
      "{:>6}",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
      "busbw", "#wrong");
  std::string units = fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  {:>6}  "
      "{:>5}",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      "");
  if (!baseline.empty()) {
    // Two blocks: the peer in place (against tutti's in-place column), then out of place.
    titles += fmt::format("{:>32}", fmt::format("baseline: {}", baseline));
    titles += fmt::format("{:>40}", fmt::format("{} out of place", baseline));
    for (int block = 0; block < 2; ++block) {
      names += fmt::format("  {:>7}  {:>6}  {:>6} {:>6}  {:>6}", "time", "algbw", "busbw", "#wrong",
                           "ratio");
      units +=
          fmt::format("  {:>7}  {:>6}  {:>6}  {:>5}  {:>6}", "(us)", "(GB/s)", "(GB/s)", "", "(x)");
    }
  }
  return "#\n" + titles + "\n" + names + "\n" + units + "\n";
}

std::string baseline_header_text(std::string_view name, const std::string& description, int rounds,
                                 int iters) {
  return fmt::format(
      "#\n# Baseline {}: {}\n# Interleaved: {} rounds of {} iterations, tutti's in-place allreduce "
      "then the baseline's, on the same buffer, and the same for out of place;\n# in-place, "
      "out-of-place and baseline columns are medians over rounds; ratio = tutti busbw / baseline "
      "busbw (in place against the baseline in place, out of place against out of place), median "
      "of the per-round ratios.\n",
      name, description, rounds, iters);
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

std::string baseline_text(const BaselineResult& b) {
  if (!b.supported)
    return fmt::format("  {:>7}  {:>6}  {:>6}  {:>5}  {:>6}", "N/A", "N/A", "N/A", "N/A", "N/A");
  return measurement_text(b.measurement) + fmt::format("  {:6.2f}", b.ratio);
}

std::string csv_measurement(const Measurement& m) {
  std::string wrong = m.wrong < 0 ? "" : fmt::format("{}", m.wrong);
  // Significant digits, not decimals: 8 B at milliseconds is ~1e-6 GB/s, and a log-scale plot
  // drops a point printed as 0.
  return fmt::format("{:.3f},{:.6g},{:.6g},{}", m.time_us, m.algbw, m.busbw, wrong);
}
}  // namespace

std::string row_text(const Row& r) {
  std::string out = fmt::format("{:12d}  {:12d}  {:>8}  {:>6}  {:6d}", r.size_bytes, r.count,
                                type_name(r.type), r.redop, r.root) +
                    measurement_text(r.out_of_place) + measurement_text(r.in_place);
  if (r.baseline) out += baseline_text(*r.baseline);
  if (r.baseline_out_of_place) out += baseline_text(*r.baseline_out_of_place);
  return out + "\n";
}

std::string csv_header_text() {
  return "size,count,type,redop,root,nranks,time_us,algbw_gbps,busbw_gbps,wrong,"
         "inplace_time_us,inplace_algbw_gbps,inplace_busbw_gbps,inplace_wrong,baseline,"
         "baseline_time_us,baseline_algbw_gbps,baseline_busbw_gbps,baseline_wrong,ratio,"
         "oop_baseline_time_us,oop_baseline_algbw_gbps,oop_baseline_busbw_gbps,oop_baseline_wrong,"
         "oop_ratio\n";
}

std::string csv_row_text(const Row& r, int nranks, std::string_view baseline) {
  std::string out = fmt::format("{},{},{},{},{},{},", r.size_bytes, r.count, type_name(r.type),
                                r.redop, r.root, nranks) +
                    csv_measurement(r.out_of_place) + "," + csv_measurement(r.in_place) + "," +
                    std::string(baseline);
  // Appended piece by piece: g++ 12 at -O3 sees a false -Wrestrict overlap in "," + string.
  for (const auto* b : {&r.baseline, &r.baseline_out_of_place}) {
    if (*b && (*b)->supported) {
      out += ',';
      out += csv_measurement((*b)->measurement);
      out += fmt::format(",{:.6g}", (*b)->ratio);
    } else {
      out += ",,,,,";
    }
  }
  return out + "\n";
}

std::string footer_text(int64_t out_of_bounds, double avg_busbw) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:g} \n#\n",
                     out_of_bounds, out_of_bounds == 0 ? "OK" : "FAILED", avg_busbw);
}

}  // namespace tutti::bench
