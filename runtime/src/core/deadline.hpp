// Every blocking wait in tutti takes a Deadline, never a bare duration, so that nested waits share
// one budget and none can wait forever.
#pragma once

#include <chrono>

namespace tutti {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::nanoseconds d) { return Deadline(Clock::now() + d); }
  static Deadline after_seconds(double s) {
    return after(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s)));
  }
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool expired() const { return Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }
  std::chrono::nanoseconds remaining() const {
    if (at_ == Clock::time_point::max()) return std::chrono::nanoseconds::max();
    auto left = at_ - Clock::now();
    return left.count() > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(left)
                            : std::chrono::nanoseconds(0);
  }
  // Remaining time in whole milliseconds for poll()-style calls, capped at cap_ms.
  int remaining_ms(int cap_ms) const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(remaining()).count();
    return ms > cap_ms ? cap_ms : static_cast<int>(ms);
  }
  Deadline earlier(Deadline other) const { return at_ < other.at_ ? *this : other; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace tutti
