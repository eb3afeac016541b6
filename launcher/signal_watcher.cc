#include "launcher/signal_watcher.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "core/error.hpp"

namespace tutti::launcher {
namespace {

std::atomic<int> g_write_fd{-1};

extern "C" void on_signal(int sig) {
  int saved = errno;
  int fd = g_write_fd.load();
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(sig);
    // A full pipe only loses duplicate wake-ups; the loop reaps and re-checks anyway.
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved;
}

constexpr int kWatched[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};

}  // namespace

SignalWatcher::SignalWatcher() : pipe_(make_pipe(true)) {
  int flags = ::fcntl(pipe_.write_end.get(), F_GETFL);
  if (flags < 0 || ::fcntl(pipe_.write_end.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    throw_system_error("fcntl O_NONBLOCK on the signal pipe", errno);
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, pipe_.write_end.get()))
    throw make_error(ErrorCode::kInternal,
                     "tuttirun: a second SignalWatcher was created while one exists");
  try {
    for (int sig : kWatched) {
      struct sigaction sa {};
      sa.sa_handler = on_signal;
      ::sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
      struct sigaction old {};
      if (::sigaction(sig, &sa, &old) != 0) throw_system_error("sigaction", errno);
      previous_.emplace_back(sig, old);
    }
  } catch (...) {
    // The destructor does not run for a half-built watcher: undo here.
    for (auto& [sig, old] : previous_) ::sigaction(sig, &old, nullptr);
    g_write_fd.store(-1);
    throw;
  }
}

SignalWatcher::~SignalWatcher() {
  for (auto& [sig, old] : previous_) ::sigaction(sig, &old, nullptr);
  g_write_fd.store(-1);
}

std::vector<int> SignalWatcher::take() {
  std::vector<int> out;
  unsigned char buf[64];
  for (;;) {
    ssize_t n = ::read(pipe_.read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) out.push_back(buf[i]);
  }
  return out;
}

}  // namespace tutti::launcher
