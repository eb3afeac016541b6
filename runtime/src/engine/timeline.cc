#include "engine/timeline.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace tutti::engine {
namespace {

// A JSON string literal (names are the user's: quotes, backslashes and control bytes escaped).
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace

Timeline& Timeline::instance() {
  static Timeline timeline;
  return timeline;
}

void Timeline::start(const std::string& path) {
  stop();
  std::lock_guard lock(mutex_);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    throw make_error(ErrorCode::kSystem, "cannot write the timeline to '{}': {}", path,
                     std::strerror(errno));
  file_.reset(f);
  path_ = path;
  first_ = true;
  origin_ = Clock::now();
  pids_.clear();
  tids_.clear();
  std::fputs("[\n", f);
  active_.store(true);
}

void Timeline::stop() {
  std::lock_guard lock(mutex_);
  if (!file_) return;
  active_.store(false);
  std::fputs("\n]\n", file_.get());
  file_.reset();
}

void Timeline::write_event(std::string_view json) {
  if (!first_) std::fputs(",\n", file_.get());
  first_ = false;
  std::fwrite(json.data(), 1, json.size(), file_.get());
}

int Timeline::pid_of(std::string_view set) {
  auto [it, inserted] = pids_.try_emplace(std::string(set), static_cast<int>(pids_.size()) + 1);
  if (inserted)
    write_event(
        fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}})",
                    it->second, quoted(fmt::format("tutti engine: {}", set))));
  return it->second;
}

int Timeline::tid_of(int pid, std::string_view tensor) {
  auto [it, inserted] =
      tids_.try_emplace(fmt::format("{}/{}", pid, tensor), static_cast<int>(tids_.size()) + 1);
  if (inserted)
    write_event(
        fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})",
                    pid, it->second, quoted(tensor)));
  return it->second;
}

void Timeline::span(std::string_view set, std::string_view tensor, std::string_view what,
                    Clock::time_point begin, Clock::time_point end) {
  if (!active()) return;
  std::lock_guard lock(mutex_);
  if (!file_) return;
  const int pid = pid_of(set);
  const int tid = tid_of(pid, tensor);
  using us = std::chrono::duration<double, std::micro>;
  const double ts = us(begin - origin_).count();
  const double dur = us(end > begin ? end - begin : Clock::duration::zero()).count();
  write_event(fmt::format(R"({{"name":{},"cat":"engine","ph":"X","ts":{:.3f},"dur":{:.3f},)"
                          R"("pid":{},"tid":{}}})",
                          quoted(what), ts, dur, pid, tid));
}

void Timeline::instant(std::string_view set, std::string_view what) {
  if (!active()) return;
  std::lock_guard lock(mutex_);
  if (!file_) return;
  const int pid = pid_of(set);
  using us = std::chrono::duration<double, std::micro>;
  write_event(fmt::format(R"({{"name":{},"cat":"engine","ph":"i","s":"p","ts":{:.3f},"pid":{},)"
                          R"("tid":0}})",
                          quoted(what), us(Clock::now() - origin_).count(), pid));
}

}  // namespace tutti::engine
