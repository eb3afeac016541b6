// Turns SIGCHLD, SIGINT, SIGTERM and SIGHUP into bytes on a pipe (the self-pipe trick), so the one
// poll loop of the supervisor wakes for signals as well as for output. One instance at a time;
// the previous handlers come back when it is destroyed.
#pragma once

#include <signal.h>

#include <vector>

#include "launcher/pipe.hpp"

namespace tutti::launcher {

class SignalWatcher {
 public:
  SignalWatcher();
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  int fd() const { return pipe_.read_end.get(); }  // readable when a signal arrived
  // Signals received since the last call, in arrival order (without blocking).
  std::vector<int> take();

 private:
  Pipe pipe_;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

}  // namespace tutti::launcher
