#include "core/parse.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace tutti::parse {
namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

int64_t integer(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  std::string_view t = trim(text);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || end != t.data() + t.size() ||
      (ec != std::errc() && ec != std::errc::result_out_of_range))
    throw make_error(ErrorCode::kConfig, "{}='{}' is not a whole number", what, text);
  if (ec == std::errc::result_out_of_range || value < min || value > max)
    throw make_error(ErrorCode::kConfig, "{}='{}' is out of range: it must be between {} and {}",
                     what, text, min, max);
  return value;
}

uint64_t bytes(std::string_view text, std::string_view what, uint64_t min, uint64_t max) {
  std::string t = lowercase(trim(text));
  if (t.ends_with("b")) t.pop_back();
  if (t.ends_with("i")) t.pop_back();
  unsigned shift = 0;
  if (!t.empty()) {
    switch (t.back()) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      default:
        break;
    }
    if (shift != 0) t.pop_back();
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || end != t.data() + t.size() ||
      (ec != std::errc() && ec != std::errc::result_out_of_range))
    throw make_error(ErrorCode::kConfig, "{}='{}' is not a byte size (examples: 4096, 64K, 1M, 2G)",
                     what, text);
  const bool overflow =
      ec == std::errc::result_out_of_range || (shift != 0 && value > (~uint64_t{0} >> shift));
  if (!overflow) value <<= shift;
  if (overflow || value < min || value > max)
    throw make_error(ErrorCode::kConfig,
                     "{}='{}' is out of range: it must be between {} and {} bytes", what, text, min,
                     max);
  return value;
}

double seconds(std::string_view text, std::string_view what, double min_seconds,
               double max_seconds) {
  std::string t(trim(text));
  double scale = 1.0;
  if (t.size() > 2 && t.ends_with("ms")) {
    scale = 1e-3;
    t.resize(t.size() - 2);
  } else if (t.size() > 1 && t.back() == 's') {
    t.pop_back();
  } else if (t.size() > 1 && t.back() == 'm') {
    scale = 60.0;
    t.pop_back();
  }
  double value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value, std::chars_format::fixed);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(value))
    throw make_error(ErrorCode::kConfig,
                     "{}='{}' is not a duration (examples: 30, 2.5s, 500ms, 5m)", what, text);
  value *= scale;
  if (value == 0 && min_seconds > 0)
    throw make_error(ErrorCode::kConfig,
                     "{}='{}' is refused: every wait in tutti has a deadline, and zero would fail "
                     "at once; pass a large value such as 86400 for a very long one",
                     what, text);
  if (!(value >= min_seconds && value <= max_seconds))
    throw make_error(ErrorCode::kConfig,
                     "{}='{}' is out of range: it must be between {} s and {} s", what, text,
                     min_seconds, max_seconds);
  return value;
}

std::string bytes_text(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  if (value == static_cast<double>(static_cast<uint64_t>(value)))
    return fmt::format("{} {}", static_cast<uint64_t>(value), kUnits[unit]);
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace tutti::parse
