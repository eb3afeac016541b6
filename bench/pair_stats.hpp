// Summaries of interleaved rounds: tutti and a baseline timed in turn (A B A B), one time each per
// round. The machine's speed drifts by several times within a run, so the ratio is taken per round
// (both sides saw the same conditions) and its median reported, never the ratio of two averages.
#pragma once

#include <span>
#include <vector>

namespace tutti::bench {

// Median of values (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

struct PairSummary {
  double ours_seconds = 0;  // median over rounds
  double base_seconds = 0;  // median over rounds
  double ratio = 0;         // median of base/ours per round = ours busbw / baseline busbw
};

// ours[i] and base[i] were measured in round i; the spans have the same length.
PairSummary summarize_pairs(std::span<const double> ours, std::span<const double> base);

}  // namespace tutti::bench
