#pragma once

#include <fmt/format.h>

#include <string>

#include "tutti/error.hpp"

namespace tutti {

std::string_view to_string(ErrorCode code);

// Builds an Error with a fmt-formatted message: throw make_error(ErrorCode::kTimeout, "...{}", x);
template <typename... Args>
Error make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Error(code, fmt::format(format, std::forward<Args>(args)...));
}

// Throws kSystem naming the failed call and errno's text.
[[noreturn]] void throw_system_error(std::string_view what, int err);

}  // namespace tutti
