// tutti-bench --tune FILE: fits time = alpha + bytes * beta to one algorithm's measured allreduce
// times (the algorithm the job runs under TUTTI_ALGO) and merges that line into FILE, the tuning
// file the runtime reads from TUTTI_TUNE_FILE (runtime/src/collectives/tune_file.hpp has the
// format). bench/tune.sh runs every algorithm in turn.
#pragma once

#include <optional>
#include <span>
#include <string>

namespace tutti::bench {

struct TunePoint {
  double bytes = 0;
  double seconds = 0;
};

struct TuneLine {
  std::string algorithm;  // ring, tree, hd, shm, hier
  int ranks = 0;
  int hosts = 0;
  std::string transport = "auto";
  double alpha_us = 0;
  double beta_ns_per_byte = 0;
};

// Least squares on relative error (weights 1/t^2), so 8 B and 64 MiB points count alike; alpha
// and beta are clamped at 0 (a negative intercept is noise, not a faster-than-free call).
// Needs two points of different sizes, otherwise nullopt.
std::optional<TuneLine> fit_tune_line(std::span<const TunePoint> points, TuneLine key);

// `existing`: the file's text, or empty. Returns the new text: every line of `existing` whose key
// (algorithm, ranks, hosts, transport) differs from `line`'s, then `line` with its points.
// Throws std::runtime_error naming `path` when `existing` is not a tuning file.
std::string merge_tune_file(const std::string& existing, const TuneLine& line,
                            std::span<const TunePoint> points, const std::string& path);

}  // namespace tutti::bench
