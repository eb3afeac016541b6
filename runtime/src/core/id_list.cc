#include "core/id_list.hpp"

#include <algorithm>
#include <charconv>

namespace tutti {

std::string format_ids(std::span<const int> ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

std::optional<std::vector<int>> parse_ids(std::string_view text, int limit) {
  std::vector<int> out;
  if (text.empty()) return out;
  size_t at = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', at), text.size());
    int value = -1;
    const auto [end, error] = std::from_chars(text.data() + at, text.data() + comma, value);
    if (error != std::errc() || end != text.data() + comma || value < 0 || value >= limit ||
        std::find(out.begin(), out.end(), value) != out.end())
      return std::nullopt;
    out.push_back(value);
    if (comma == text.size()) return out;
    at = comma + 1;
  }
}

}  // namespace tutti
