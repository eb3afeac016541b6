#include "engine/autotune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace tutti::engine {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
const uint64_t kThresholds[] = {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 128 * kMiB};
const uint64_t kCycleTimesUs[] = {100, 250, 500, 1000, 2500, 5000};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

Autotuner::Autotuner(Choice start, Clock::duration window, int windows_per_candidate)
    : best_(start),
      window_(window),
      per_candidate_(std::max(1, windows_per_candidate)),
      start_(start) {
  // The starting point is measured first, so a grid that does no better keeps it.
  candidates_.push_back(start);
  for (uint64_t t : kThresholds)
    if (t != start.fusion_threshold) candidates_.push_back({t, start.cycle_time_us});
}

std::optional<Autotuner::Choice> Autotuner::record(uint64_t bytes, Clock::time_point now) {
  if (done_) return std::nullopt;
  if (!started_) {
    started_ = true;
    window_start_ = now;
    window_bytes_ = 0;
    return std::nullopt;
  }
  window_bytes_ += bytes;
  if (now - window_start_ < window_) return std::nullopt;
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  rates_.push_back(static_cast<double>(window_bytes_) / seconds);
  window_start_ = now;
  window_bytes_ = 0;
  if (static_cast<int>(rates_.size()) < per_candidate_) return std::nullopt;
  const double rate = median(rates_);
  rates_.clear();
  if (start_rate_ < 0) start_rate_ = rate;
  if (rate > best_rate_) {
    best_rate_ = rate;
    best_ = candidates_[current_];
  }
  next_candidate();
  return done_ ? best_ : candidates_[current_];
}

void Autotuner::next_candidate() {
  if (++current_ < candidates_.size()) return;
  if (phase_ == 0) {
    phase_ = 1;
    candidates_.clear();
    for (uint64_t c : kCycleTimesUs)
      if (c != best_.cycle_time_us) candidates_.push_back({best_.fusion_threshold, c});
    current_ = 0;
    return;
  }
  done_ = true;
}

std::string Autotuner::summary() const {
  return fmt::format(
      "fusion threshold {}, cycle time {} us: {:.0f} MB/s (at the start: {:.0f} "
      "MB/s)",
      parse::bytes_text(best_.fusion_threshold), best_.cycle_time_us, best_rate_ / 1e6,
      start_rate_ / 1e6);
}

std::optional<Autotuner::Choice> Autotuner::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::nullopt;
    throw make_error(ErrorCode::kConfig, "TUTTI_AUTOTUNE_FILE '{}' cannot be read: {}", path,
                     std::strerror(errno));
  }
  Choice c;
  bool threshold = false, cycle = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    const std::string key = line.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
    try {
      if (key == "fusion_threshold") {
        c.fusion_threshold = std::stoull(value);
        threshold = true;
      } else if (key == "cycle_time_us") {
        c.cycle_time_us = std::stoull(value);
        cycle = true;
      }
    } catch (const std::exception&) {
      throw make_error(ErrorCode::kConfig, "TUTTI_AUTOTUNE_FILE '{}': '{}' is not a number", path,
                       line);
    }
  }
  if (!threshold || !cycle || c.cycle_time_us == 0 || c.cycle_time_us > 1'000'000 ||
      c.fusion_threshold > (uint64_t{4} << 30))
    throw make_error(
        ErrorCode::kConfig,
        "TUTTI_AUTOTUNE_FILE '{}' is not a tutti autotune file (fusion_threshold=<bytes "
        "up to 4G> and cycle_time_us=<1..1000000>); delete it to tune again",
        path);
  return c;
}

void Autotuner::write(const std::string& path, Choice choice, const std::string& comment) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "# tutti engine autotune: " << comment << "\n"
        << "fusion_threshold=" << choice.fusion_threshold << "\n"
        << "cycle_time_us=" << choice.cycle_time_us << "\n";
    if (!out) throw make_error(ErrorCode::kSystem, "cannot write TUTTI_AUTOTUNE_FILE '{}'", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw make_error(ErrorCode::kSystem, "cannot write TUTTI_AUTOTUNE_FILE '{}': {}", path,
                     std::strerror(errno));
}

}  // namespace tutti::engine
