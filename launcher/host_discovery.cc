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

Discovery discover_hosts(const std::string& script, double timeout_seconds) {
  Discovery result;
  const auto fail = [&](const std::string& why) {
    result.hosts = {};
    result.error = fmt::format("host discovery script '{}' {}", script, why);
    return result;
  };
  ChildProcess child = [&] {
    SpawnRequest request;
    request.path = "/bin/sh";
    request.argv = {"sh", "-c", script};
    for (char** e = environ; *e != nullptr; ++e) request.env.emplace_back(*e);
    return ChildProcess::spawn(request);
  }();
  net::Fd out = child.take_stdout();
  net::Fd err = child.take_stderr();
  std::string text, errors;
  const Deadline deadline = Deadline::after_seconds(timeout_seconds);
  bool out_open = true, err_open = true;
  while ((out_open || err_open) && !deadline.expired()) {
    pollfd p[2] = {{out_open ? out.get() : -1, POLLIN, 0}, {err_open ? err.get() : -1, POLLIN, 0}};
    if (::poll(p, 2, deadline.remaining_ms(100)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (p[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(p[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? text : errors).append(buffer, static_cast<size_t>(n));
        if (text.size() > (1u << 20)) return fail("printed more than 1 MiB");
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  if (out_open || err_open) {
    child.signal(SIGKILL);
    return fail(fmt::format("did not finish within {} s", timeout_seconds));
  }
  std::optional<ExitStatus> status;
  while (!(status = child.try_reap()) && !deadline.expired()) ::usleep(1000);
  if (!status) {
    child.signal(SIGKILL);
    return fail(fmt::format("did not exit within {} s", timeout_seconds));
  }
  if (!status->success()) {
    const size_t cut = errors.find_last_not_of("\n ");
    return fail(fmt::format("{}{}", status->describe(),
                            cut == std::string::npos ? "" : ": " + errors.substr(0, cut + 1)));
  }
  try {
    result.hosts = parse_discovered(text);
  } catch (const Error& e) {
    return fail(fmt::format("printed {}", e.what()));
  }
  return result;
}

}  // namespace tutti::launcher
