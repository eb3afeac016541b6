// tutti-bench's reads of its environment. tutti reads an empty variable as unset everywhere; the
// runtime's helper for that (env::process_value, runtime/src/core/env.hpp) is hidden inside
// libtutti, which the bench reaches only through the public API, so the bench keeps this one copy.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace tutti::bench {

// nullopt when `name` is unset or empty.
inline std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

}  // namespace tutti::bench
