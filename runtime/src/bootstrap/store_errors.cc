#include "bootstrap/store_errors.hpp"

#include "core/parse.hpp"

namespace tutti::bootstrap {

std::string join_keys(const std::vector<std::string>& keys, size_t limit) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < limit; ++i) {
    if (i > 0) out += ", ";
    out += "'" + keys[i] + "'";
  }
  if (keys.size() > limit) out += fmt::format(" and {} more", keys.size() - limit);
  return out;
}

Error get_timeout_error(const std::string& store, const std::string& key) {
  return make_error(ErrorCode::kTimeout,
                    "timed out waiting for key '{}' in store {}; the rank that should set it has "
                    "not arrived (is it running? raise TUTTI_TIMEOUT if it starts slowly)",
                    key, store);
}

Error wait_timeout_error(const std::string& store, const std::vector<std::string>& missing) {
  return make_error(ErrorCode::kTimeout,
                    "timed out waiting for {} key(s) in store {}: still missing {}; the ranks that "
                    "should set them have not arrived (raise TUTTI_TIMEOUT if they start slowly)",
                    missing.size(), store, join_keys(missing));
}

Error not_an_integer_error(const std::string& store, const std::string& key,
                           const std::string& value) {
  return make_error(ErrorCode::kInvalidArgument,
                    "add() on key '{}' in store {}: its value '{}' is not an integer; use a key "
                    "that only add() touches",
                    key, store, value.size() > 64 ? value.substr(0, 64) + "..." : value);
}

int64_t parse_counter(const std::string& store, const std::string& key, const std::string* value) {
  if (value == nullptr) return 0;
  try {
    return parse::integer(*value, key);
  } catch (const Error&) {
    throw not_an_integer_error(store, key, *value);
  }
}

int64_t add_to_counter(const std::string& store, const std::string& key, const std::string* value,
                       int64_t delta) {
  const int64_t current = parse_counter(store, key, value);
  int64_t result = 0;
  if (__builtin_add_overflow(current, delta, &result))
    throw make_error(
        ErrorCode::kInvalidArgument,
        "add({}) on key '{}' in store {}: its value {} would overflow a 64-bit counter", delta, key,
        store, current);
  return result;
}

}  // namespace tutti::bootstrap
