// Algorithm names and the allreduce cost model. The environment override (TUTTI_ALGO) is read by
// the caller and passed in as an Algorithm; kAuto lands here.
#include <algorithm>
#include <cctype>
#include <string>

#include "collectives/collectives.hpp"
#include "core/error.hpp"

namespace tutti::collectives {
namespace {

// Up to here a message is latency-bound: halving-doubling needs 2 log2(size) rounds against the
// ring's 2 (size-1), and at 64 KiB a round's fixed cost (tens of microseconds over TCP) still
// outweighs the time spent moving bytes.
constexpr size_t kHalvingDoublingMaxBytes = 64 << 10;
// Between the two, the double binary tree keeps logarithmic depth while pipelining segments over
// both trees, so it already moves data at near-ring bandwidth. Beyond a few MiB the ring's
// per-step latency is amortized and its perfectly balanced neighbour-only traffic wins.
constexpr size_t kTreeMaxBytes = 4 << 20;
// With three or fewer ranks the ring has at most four steps, no more than a tree's round trip.
constexpr int kTreeMinRanks = 4;

}  // namespace

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHalvingDoubling:
      return "hd";
    case Algorithm::kShm:
      return "shm";
  }
  return "?";
}

Algorithm parse_algorithm(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kHalvingDoubling, Algorithm::kShm}) {
    if (lower == to_string(a)) return a;
  }
  throw make_error(
      ErrorCode::kConfig,
      "unknown allreduce algorithm '{}'; set TUTTI_ALGO to auto, ring, tree, hd or shm", name);
}

Algorithm select_allreduce(size_t bytes, int size, bool local_window) {
  if (size <= 1) return Algorithm::kRing;  // no communication at all; any algorithm will do
  // Reading each other's memory beats moving bytes through any channel at every size: one flag
  // round trip for small messages, and each byte crosses between ranks once (no framing, no ring
  // buffer copies) for large ones.
  if (local_window) return Algorithm::kShm;
  if (bytes <= kHalvingDoublingMaxBytes) return Algorithm::kHalvingDoubling;
  if (bytes <= kTreeMaxBytes && size >= kTreeMinRanks) return Algorithm::kTree;
  return Algorithm::kRing;
}

}  // namespace tutti::collectives
