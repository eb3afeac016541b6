#include "core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <string>

#include "core/env.hpp"

namespace tutti::log {
namespace {

Level level_from_env() {
  try {
    std::string v = env::get_choice("TUTTI_LOG_LEVEL");
    if (v == "error") return Level::kError;
    if (v == "info") return Level::kInfo;
    if (v == "debug") return Level::kDebug;
    if (v == "trace") return Level::kTrace;
  } catch (...) {
    // A bad TUTTI_LOG_LEVEL must not stop logging itself; init reports it through the registry.
  }
  return Level::kWarn;
}

std::atomic<int>& threshold_storage() {
  static std::atomic<int> value{static_cast<int>(level_from_env())};
  return value;
}
std::atomic<int> g_rank{-1};

constexpr std::string_view kNames[] = {"error", "warn", "info", "debug", "trace"};

}  // namespace

Level threshold() {
  return static_cast<Level>(threshold_storage().load(std::memory_order_relaxed));
}
void set_threshold(Level level) {
  threshold_storage().store(static_cast<int>(level));
}
void set_rank(int rank) {
  g_rank.store(rank);
}
void set_rank_if_unknown(int rank) {
  int unknown = -1;
  g_rank.compare_exchange_strong(unknown, rank);
}
bool enabled(Level level) {
  return static_cast<int>(level) <= threshold_storage().load(std::memory_order_relaxed);
}

void write(Level level, std::string_view message) {
  int rank = g_rank.load();
  std::string line =
      rank >= 0
          ? fmt::format("tutti rank {} {}: {}\n", rank, kNames[static_cast<int>(level)], message)
          : fmt::format("tutti {}: {}\n", kNames[static_cast<int>(level)], message);
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace tutti::log
