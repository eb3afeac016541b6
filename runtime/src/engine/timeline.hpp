// The engine's timeline: Chrome trace-event JSON (chrome://tracing, Perfetto), one file per
// process. Each process set is a "process" row group and each tensor name a row, with complete
// ("X") spans for queue, negotiate, fusion copy in/out, collective and callback. Started and
// stopped at run time; when stopped the file is a complete JSON array.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tutti::engine {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  static Timeline& instance();

  // Opens `path` (truncating it); Error(kSystem) if it cannot be written. A running timeline is
  // stopped first.
  void start(const std::string& path);
  void stop();
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // `set` names the process set ("world", "comm 3"), `tensor` the row.
  void span(std::string_view set, std::string_view tensor, std::string_view what,
            Clock::time_point begin, Clock::time_point end);
  void instant(std::string_view set, std::string_view what);

 private:
  Timeline() = default;
  int pid_of(std::string_view set);
  int tid_of(int pid, std::string_view tensor);
  void write_event(std::string_view json);

  std::mutex mutex_;
  std::atomic<bool> active_{false};
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
  std::string path_;
  bool first_ = true;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> pids_;
  std::unordered_map<std::string, int> tids_;  // "pid/tensor"
};

}  // namespace tutti::engine
