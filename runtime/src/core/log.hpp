// One logger: single-line messages to stderr, prefixed with the rank once it is known, filtered by
// TUTTI_LOG_LEVEL. Each line is written with one write(2) so lines of concurrent threads never
// interleave.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace tutti::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

Level threshold();
void set_threshold(Level level);
void set_rank(int rank);  // -1: not yet known
// For worlds made from a user's store or an MPI communicator, where a process may make several
// (torch's process groups): the first one's rank names the process's lines.
void set_rank_if_unknown(int rank);
bool enabled(Level level);
void write(Level level, std::string_view message);

template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kError)) write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kWarn)) write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kInfo)) write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kDebug)) write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void trace(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kTrace)) write(Level::kTrace, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tutti::log
