#include "pair_stats.hpp"

#include <algorithm>

namespace tutti::bench {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

PairSummary summarize_pairs(std::span<const double> ours, std::span<const double> base) {
  const size_t n = std::min(ours.size(), base.size());
  std::vector<double> ratios;
  for (size_t i = 0; i < n; ++i)
    if (ours[i] > 0) ratios.push_back(base[i] / ours[i]);
  PairSummary s;
  s.ours_seconds = median(std::vector<double>(ours.begin(), ours.begin() + n));
  s.base_seconds = median(std::vector<double>(base.begin(), base.begin() + n));
  s.ratio = median(std::move(ratios));
  return s;
}

}  // namespace tutti::bench
