#include "launcher/host_discovery.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "core/deadline.hpp"
#include "core/error.hpp"
#include "launcher/child_process.hpp"
#include "launcher/host_source.hpp"

extern char** environ;

namespace tutti::launcher {

hostfile::Hostfile parse_discovered(const std::string& text) {
  hostfile::Hostfile out;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t last = line.find_last_not_of(" \t\r");
    const std::string entry = line.substr(first, last - first + 1);
    hostfile::Hostfile one;
    try {
      one = parse_host_list(entry, 1);
    } catch (const Error& e) {
      throw make_error(ErrorCode::kConfig, "line {} '{}' is not host[:slots]: {}", number, entry,
                       e.what());
    }
    if (one.hosts.size() != 1)
      throw make_error(ErrorCode::kConfig, "line {} '{}' is not one host[:slots]", number, entry);
    for (const hostfile::Host& h : out.hosts)
      if (h.name == one.hosts[0].name)
        throw make_error(ErrorCode::kConfig, "line {}: host {} is listed twice", number, h.name);
    out.hosts.push_back(one.hosts[0]);
  }
  return out;
}

namespace {

ChildProcess spawn_script(const std::string& script) {
  SpawnRequest request;
  request.path = "/bin/sh";
  request.argv = {"sh", "-c", script};
  for (char** e = environ; *e != nullptr; ++e) request.env.emplace_back(*e);
  return ChildProcess::spawn(request);
}

// What a script may print before it counts as broken (stdout), and how much of its stderr goes
// into the message.
constexpr size_t kMostOutput = 1 << 20;
constexpr size_t kMostErrors = 4096;

}  // namespace

DiscoveryRun::DiscoveryRun(const std::string& script, double timeout_seconds)
    : script_(script),
      timeout_seconds_(timeout_seconds),
      deadline_(Deadline::after_seconds(timeout_seconds)),
      child_(spawn_script(script)),
      out_(child_.take_stdout()),
      err_(child_.take_stderr()) {}

Discovery DiscoveryRun::fail(const std::string& why) {
  child_.signal(SIGKILL);  // reaped by ~ChildProcess
  return Discovery{{}, fmt::format("host discovery script '{}' {}", script_, why)};
}

std::optional<Discovery> DiscoveryRun::poll() {
  // The pipes are non-blocking: read what is there, note the ends.
  for (net::Fd* fd : {&out_, &err_}) {
    std::string& into = fd == &out_ ? text_ : errors_;
    char buffer[4096];
    for (;;) {
      if (!fd->valid()) break;
      const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
      if (n > 0) {
        if (fd == &out_ || into.size() < kMostErrors) into.append(buffer, static_cast<size_t>(n));
        if (text_.size() > kMostOutput) return fail("printed more than 1 MiB");
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || errno != EAGAIN) *fd = net::Fd();  // its end (or an error: the same)
      break;
    }
  }
  if (out_.valid() || err_.valid()) {
    if (deadline_.expired())
      return fail(fmt::format("did not finish within {} s", timeout_seconds_));
    return std::nullopt;
  }
  const std::optional<ExitStatus> status = child_.try_reap();
  if (!status) {
    if (deadline_.expired()) return fail(fmt::format("did not exit within {} s", timeout_seconds_));
    return std::nullopt;
  }
  if (!status->success()) {
    const size_t cut = errors_.find_last_not_of("\n ");
    return fail(fmt::format("{}{}", status->describe(),
                            cut == std::string::npos ? "" : ": " + errors_.substr(0, cut + 1)));
  }
  try {
    return Discovery{parse_discovered(text_), ""};
  } catch (const Error& e) {
    return Discovery{{}, fmt::format("host discovery script '{}' printed {}", script_, e.what())};
  }
}

Discovery discover_hosts(const std::string& script, double timeout_seconds) {
  DiscoveryRun run(script, timeout_seconds);
  for (;;) {
    if (std::optional<Discovery> found = run.poll()) return *found;
    ::usleep(2000);
  }
}

}  // namespace tutti::launcher
