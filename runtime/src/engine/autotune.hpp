// Online tuning of the fusion threshold and the cycle time (TUTTI_AUTOTUNE=1), on rank 0, from
// the bytes the engine completes per second. Coordinate descent over a short grid: each candidate
// runs for a few windows and keeps its median; first the thresholds (at the starting cycle time),
// then the cycle times (at the best threshold). Horovod's Bayesian search needs dozens of samples;
// this needs 3 windows per candidate (about 5 s of training at the default half-second window),
// because both knobs act on throughput monotonically up to a knee, which a grid finds.
// Rank 0 sends every change in its announcements, so every rank fuses the same batches.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tutti::engine {

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;
  struct Choice {
    uint64_t fusion_threshold = 0;
    uint64_t cycle_time_us = 0;
  };

  Autotuner(Choice start, Clock::duration window, int windows_per_candidate = 3);

  // Bytes of completed operations at `now`; returns a new choice to apply when one is due.
  std::optional<Choice> record(uint64_t bytes, Clock::time_point now);
  bool done() const { return done_; }
  Choice best() const { return best_; }
  // "fusion threshold 16M, cycle time 500 us: 812 MB/s (start: 640 MB/s)"
  std::string summary() const;

  // The file a tuned run writes and a later run reads: "fusion_threshold=<bytes>\n
  // cycle_time_us=<us>\n". read() returns nullopt when the file does not exist and throws
  // Error(kConfig) naming the file when it is malformed.
  static std::optional<Choice> read(const std::string& path);
  static void write(const std::string& path, Choice choice, const std::string& comment);

 private:
  void next_candidate();

  std::vector<Choice> candidates_;
  size_t current_ = 0;
  int phase_ = 0;  // 0: thresholds, 1: cycle times
  Choice best_;
  double best_rate_ = -1;
  double start_rate_ = -1;
  Clock::duration window_;
  int per_candidate_;
  std::vector<double> rates_;
  Clock::time_point window_start_{};
  uint64_t window_bytes_ = 0;
  bool started_ = false;
  bool done_ = false;
  Choice start_;
};

}  // namespace tutti::engine
