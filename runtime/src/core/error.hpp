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

// A copy of `e` that shares nothing with it. libstdc++'s runtime_error copies share one message
// buffer through a reference count kept in uninstrumented library code, so an Error handed from
// one thread to another (an engine failure reaching a waiting caller) is copied this way: each
// thread then owns its buffer outright.
inline Error unshared(const Error& e) {
  return Error(e.code(), std::string(e.what()));
}

// Throws kSystem naming the failed call and errno's text.
[[noreturn]] void throw_system_error(std::string_view what, int err);

}  // namespace tutti
