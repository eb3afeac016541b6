#include "launcher/host_probe.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "core/deadline.hpp"
#include "core/error.hpp"

namespace tutti::launcher {
namespace {

// One probe that hangs (a stream that never opens) must not use up the whole deadline.
constexpr double kAttemptSeconds = 15.0;
constexpr double kRetryPauseSeconds = 1.0;
constexpr double kProgressEverySeconds = 10.0;

struct HostState {
  std::string host;
  bool reachable = false;
  std::string reason = "not probed yet";
  std::unique_ptr<ChildProcess> probe;
  net::Fd out;
  net::Fd err;
  std::string err_text;
  bool hopeless = false;
  Deadline attempt_deadline = Deadline::never();
  Deadline next_attempt = Deadline::after_seconds(0);
};

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t start = text.find_last_of('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end - start + 1);
}

void drain(HostState& h) {
  char buf[4096];
  for (net::Fd* fd : {&h.out, &h.err}) {
    while (fd->valid()) {
      ssize_t n = ::read(fd->get(), buf, sizeof buf);
      if (n > 0) {
        if (fd == &h.err) {
          h.err_text.append(buf, static_cast<size_t>(n));
          if (h.err_text.size() > 8192) h.err_text.erase(0, h.err_text.size() - 8192);
        }
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      fd->reset();
    }
  }
}

void finish_attempt(HostState& h, const ExitStatus& status) {
  drain(h);
  h.out.reset();
  h.err.reset();
  h.probe.reset();
  if (status.success()) {
    h.reachable = true;
    return;
  }
  std::string line = last_line(h.err_text);
  h.reason = line.empty() ? "probe " + status.describe() : line;
  h.hopeless = status.kind == ExitStatus::Kind::kExited && status.value == 127;
  h.next_attempt = Deadline::after_seconds(kRetryPauseSeconds);
}

}  // namespace

std::string describe_hosts(const std::vector<UnreachableHost>& hosts, size_t limit) {
  std::string out;
  for (size_t i = 0; i < hosts.size() && i < limit; ++i)
    out += fmt::format("{}{} ({})", i == 0 ? "" : ", ", hosts[i].host, hosts[i].reason);
  if (hosts.size() > limit) out += fmt::format(" and {} more", hosts.size() - limit);
  return out;
}

ProbeResult probe_hosts(ExecBackend& backend, const std::vector<std::string>& hosts,
                        double timeout_seconds, OutputSink& progress, SignalWatcher& signals) {
  std::vector<HostState> state;
  for (const std::string& h : hosts) {
    state.emplace_back();
    state.back().host = h;
  }
  Deadline deadline = Deadline::after_seconds(timeout_seconds);
  Deadline next_progress = Deadline::after_seconds(1.0);
  Deadline heartbeat = Deadline::after_seconds(kProgressEverySeconds);
  std::string last_progress;
  ProbeResult result;

  auto waiting = [&] {
    std::vector<UnreachableHost> out;
    for (const HostState& h : state)
      if (!h.reachable) out.push_back({h.host, h.reason});
    return out;
  };

  for (;;) {
    std::vector<UnreachableHost> pending = waiting();
    if (pending.empty()) break;
    if (deadline.expired()) {
      result.unreachable = pending;
      break;
    }
    size_t running = std::count_if(state.begin(), state.end(),
                                   [](const HostState& h) { return h.probe != nullptr; });
    for (HostState& h : state) {
      if (h.reachable || h.probe || !h.next_attempt.expired() || running >= kMaxConcurrentProbes)
        continue;
      try {
        std::optional<ChildProcess> started = backend.start_probe(h.host);
        if (!started) {  // nothing to probe with this backend
          h.reachable = true;
          continue;
        }
        h.probe = std::make_unique<ChildProcess>(std::move(*started));
      } catch (const Error& e) {
        h.reason = e.what();
        h.next_attempt = Deadline::after_seconds(kRetryPauseSeconds);
        continue;
      }
      h.out = h.probe->take_stdout();
      h.err = h.probe->take_stderr();
      h.err_text.clear();
      h.attempt_deadline = Deadline::after_seconds(kAttemptSeconds);
      ++running;
    }

    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    for (HostState& h : state)
      for (net::Fd* fd : {&h.out, &h.err})
        if (fd->valid()) fds.push_back({fd->get(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    for (int sig : signals.take())
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) result.interrupted_by = sig;
    if (result.interrupted_by) break;

    for (HostState& h : state) {
      if (!h.probe) continue;
      drain(h);
      if (auto status = h.probe->try_reap()) {
        finish_attempt(h, *status);
      } else if (h.attempt_deadline.expired()) {
        h.probe->signal(SIGKILL);
        h.err_text = fmt::format("no answer within {}s", kAttemptSeconds);
      }
    }

    auto hopeless =
        std::find_if(state.begin(), state.end(), [](const HostState& h) { return h.hopeless; });
    if (hopeless != state.end()) {
      result.hopeless = true;
      result.unreachable = {{hopeless->host, hopeless->reason}};
      break;
    }
    pending = waiting();
    if (pending.empty()) break;
    std::string line = fmt::format("tuttirun: waiting for {}/{} hosts: {}", pending.size(),
                                   state.size(), describe_hosts(pending, 5));
    // A change is shown within a second; an unchanged wait is repeated now and then, so that a
    // log shows tuttirun is still waiting.
    if ((line != last_progress && next_progress.expired()) || heartbeat.expired()) {
      progress.write(Stream::kStderr, line + "\n");
      last_progress = line;
      next_progress = Deadline::after_seconds(1.0);
      heartbeat = Deadline::after_seconds(kProgressEverySeconds);
    }
  }
  // Probes still running are killed and reaped by ChildProcess's destructor.
  return result;
}

}  // namespace tutti::launcher
