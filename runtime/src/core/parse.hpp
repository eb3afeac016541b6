// The one checked parser for numbers that come from outside: environment variables, command-line
// flags and files. Every function takes `what` (the variable, flag or file:line) to name in its
// error, refuses text that is not entirely a number, refuses overflow instead of wrapping, and
// refuses values outside the allowed range, saying what the range is. Errors are Error(kConfig).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace tutti::parse {

// The longest duration any tutti setting accepts (about 11.6 days): far beyond any sane deadline,
// yet small enough that now + duration never overflows a steady_clock time point.
inline constexpr double kMaxSeconds = 1e6;

// A whole decimal integer (optional leading '-' or '+') in [min, max].
int64_t integer(std::string_view text, std::string_view what,
                int64_t min = std::numeric_limits<int64_t>::min(),
                int64_t max = std::numeric_limits<int64_t>::max());

// A byte size: digits with an optional K, M, G or T suffix (powers of 1024; "64K", "64k", "64KiB"
// and "64KB" are the same), in [min, max]. "17179869185G" is refused, not wrapped.
uint64_t bytes(std::string_view text, std::string_view what, uint64_t min = 0,
               uint64_t max = std::numeric_limits<uint64_t>::max());

// A duration: "30", "2.5s", "500ms", "5m"; finite and in [min_seconds, max_seconds]. With a
// positive min_seconds it is a deadline, and zero is refused with a hint to pass a large value
// instead (no tutti wait is unbounded, and zero never means "no limit").
double seconds(std::string_view text, std::string_view what, double min_seconds = 0,
               double max_seconds = kMaxSeconds);

// The other way round, for messages: "512 B", "64 KiB", "1.5 MiB", "2.0 GiB" (powers of 1024).
std::string bytes_text(uint64_t bytes);

}  // namespace tutti::parse
