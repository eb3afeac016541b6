#include "tune.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tutti::bench {

std::optional<TuneLine> fit_tune_line(std::span<const TunePoint> points, TuneLine key) {
  // Weighted normal equations for t = a + b x with w = 1/t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const TunePoint& p : points) {
    if (p.seconds <= 0) continue;
    const double w = 1 / (p.seconds * p.seconds);
    sw += w;
    sx += w * p.bytes;
    sy += w * p.seconds;
    sxx += w * p.bytes * p.bytes;
    sxy += w * p.bytes * p.seconds;
  }
  const double det = sw * sxx - sx * sx;
  if (sw == 0 || std::abs(det) <= 1e-12 * sw * sxx) return std::nullopt;
  double beta = (sw * sxy - sx * sy) / det;
  double alpha = (sy - beta * sx) / sw;
  if (beta < 0) {  // times did not grow with size: all latency
    beta = 0;
    alpha = sy / sw;
  }
  if (alpha < 0) {  // refit through the origin
    alpha = 0;
    beta = sxy / sxx;
  }
  key.alpha_us = alpha * 1e6;
  key.beta_ns_per_byte = beta * 1e9;
  return key;
}

std::string merge_tune_file(const std::string& existing, const TuneLine& line,
                            std::span<const TunePoint> points, const std::string& path) {
  nlohmann::json doc = {{"tutti_tune", 1}, {"lines", nlohmann::json::array()}};
  if (!existing.empty()) {
    try {
      doc = nlohmann::json::parse(existing);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format(
          "--tune {}: the file exists but is not JSON ({}); move it away", path, e.what()));
    }
    if (!doc.is_object() || doc.value("tutti_tune", 0) != 1 || !doc.contains("lines") ||
        !doc["lines"].is_array())
      throw std::runtime_error(fmt::format(
          "--tune {}: the file exists but is not a tutti tuning file; move it away", path));
  }
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& j : doc["lines"]) {
    const bool same = j.value("algorithm", "") == line.algorithm &&
                      j.value("ranks", 0) == line.ranks && j.value("hosts", 0) == line.hosts &&
                      j.value("transport", "auto") == line.transport;
    if (!same) kept.push_back(j);
  }
  nlohmann::json measured = nlohmann::json::array();
  for (const TunePoint& p : points)
    measured.push_back({{"bytes", p.bytes}, {"us", p.seconds * 1e6}});
  kept.push_back({{"algorithm", line.algorithm},
                  {"ranks", line.ranks},
                  {"hosts", line.hosts},
                  {"transport", line.transport},
                  {"alpha_us", line.alpha_us},
                  {"beta_ns_per_byte", line.beta_ns_per_byte},
                  {"points", measured}});
  doc["lines"] = kept;
  return doc.dump(2) + "\n";
}

}  // namespace tutti::bench
