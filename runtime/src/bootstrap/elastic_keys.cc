#include "bootstrap/elastic_keys.hpp"

#include <algorithm>
#include <charconv>

namespace tutti::bootstrap::elastic_keys {

std::string format_members(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out;
}

std::vector<int> parse_members(std::string_view text) {
  std::vector<int> out;
  for (size_t at = 0; at < text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    int value = -1;
    const auto [end, error] = std::from_chars(text.data() + at, text.data() + comma, value);
    if (error != std::errc() || end != text.data() + comma || value < 0 ||
        std::find(out.begin(), out.end(), value) != out.end())
      return {};
    out.push_back(value);
    at = comma + 1;
  }
  return out;
}

}  // namespace tutti::bootstrap::elastic_keys
