#include "net/interface_pattern.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tutti::net {

bool InterfacePattern::selects(std::string_view name) const {
  const bool listed = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
    return exact ? name == n : name.starts_with(n);
  });
  return listed != exclude;
}

std::string InterfacePattern::to_string() const {
  std::string out = exclude ? "^" : "";
  if (exact) out += '=';
  for (size_t i = 0; i < names.size(); ++i) out += (i ? "," : "") + names[i];
  return out;
}

InterfacePattern parse_interface_pattern(std::string_view text, std::string_view setting) {
  InterfacePattern pattern;
  std::string_view rest = text;
  if (rest.starts_with('^')) {
    pattern.exclude = true;
    rest.remove_prefix(1);
  }
  if (rest.starts_with('=')) {
    pattern.exact = true;
    rest.remove_prefix(1);
  }
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    if (!item.empty()) pattern.names.emplace_back(item);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (pattern.names.empty())
    throw make_error(ErrorCode::kConfig,
                     "{} '{}' names no interface; write a comma list of name prefixes ('eth,ib'), "
                     "'^' before it to exclude them ('^docker,lo'), '=' for exact names ('=eth0')",
                     setting, text);
  return pattern;
}

}  // namespace tutti::net
