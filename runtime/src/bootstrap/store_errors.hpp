// The messages every Store uses when a wait runs out, so they read the same whatever the backend.
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"

namespace tutti::bootstrap {

// "a, b, c" (at most `limit` keys, then "and N more").
std::string join_keys(const std::vector<std::string>& keys, size_t limit = 16);

Error get_timeout_error(const std::string& store, const std::string& key);
Error wait_timeout_error(const std::string& store, const std::vector<std::string>& missing);
Error not_an_integer_error(const std::string& store, const std::string& key,
                           const std::string& value);

// Parses the integer stored under key for add(); missing values count as 0 (value is nullptr).
int64_t parse_counter(const std::string& store, const std::string& key, const std::string* value);
// parse_counter(value) + delta; an overflow is Error(kInvalidArgument), never a wrapped counter.
int64_t add_to_counter(const std::string& store, const std::string& key, const std::string* value,
                       int64_t delta);

}  // namespace tutti::bootstrap
