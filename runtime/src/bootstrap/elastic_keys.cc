#include "bootstrap/elastic_keys.hpp"

#include "core/id_list.hpp"

namespace tutti::bootstrap::elastic_keys {

std::string format_members(const std::vector<int>& ids) {
  return format_ids(ids);
}

std::vector<int> parse_members(std::string_view text) {
  return parse_ids(text).value_or(std::vector<int>{});
}

}  // namespace tutti::bootstrap::elastic_keys
