#include "net/congestion.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace tutti::net {
namespace {

// The kernel's TCP_CA_NAME_MAX, its terminating zero included.
constexpr size_t kNameMax = 16;

std::vector<std::string> read_words(const char* path) {
  std::ifstream in(path);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string joined(const std::vector<std::string>& words) {
  return words.empty() ? std::string("(unreadable)") : fmt::format("{}", fmt::join(words, " "));
}

std::string current(int fd) {
  std::array<char, kNameMax> name{};
  socklen_t length = name.size();
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), &length) != 0) return "";
  return std::string(name.data(), strnlen(name.data(), std::min<size_t>(length, name.size())));
}

// 0, or the errno of the failed setsockopt.
int try_set(int fd, const std::string& name) {
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                 static_cast<socklen_t>(name.size())) == 0)
    return 0;
  return errno;
}

std::string refusal(const std::string& name, int err) {
  if (err == ENOENT)
    return fmt::format(
        "the kernel has no TCP congestion control '{}' (net.ipv4.tcp_available_congestion_control: "
        "{}; a module such as tcp_{} may need loading)",
        name, joined(available_congestion_controls()), name);
  if (err == EPERM)
    return fmt::format(
        "this process may not choose '{}': it is not in net.ipv4.tcp_allowed_congestion_control "
        "({}) and the process lacks CAP_NET_ADMIN",
        name, joined(allowed_congestion_controls()));
  return fmt::format("setsockopt(TCP_CONGESTION, {}) failed: {}", name, std::strerror(err));
}

}  // namespace

CongestionSetting parse_congestion(std::string_view text, std::string_view setting) {
  if (text.empty() || text == "auto") return {};
  if (text == "system") return {CongestionSetting::Mode::kSystem, ""};
  const bool valid =
      text.size() < kNameMax && std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
  if (!valid)
    throw make_error(ErrorCode::kConfig,
                     "{}='{}' is not a TCP congestion control: pass auto (the default: CUBIC "
                     "instead of BBR), system (the kernel's choice) or a name such as cubic, reno "
                     "or dctcp (lower case, at most 15 characters)",
                     setting, text);
  return {CongestionSetting::Mode::kNamed, std::string(text)};
}

CongestionResult apply_congestion(int fd, const CongestionSetting& setting, std::string_view who) {
  CongestionResult result;
  result.before = current(fd);
  result.after = result.before;
  switch (setting.mode) {
    case CongestionSetting::Mode::kSystem:
      return result;
    case CongestionSetting::Mode::kAuto: {
      if (result.before != "bbr") return result;
      if (const int err = try_set(fd, "cubic")) {
        result.note = refusal("cubic", err);
        return result;
      }
      result.after = current(fd);
      return result;
    }
    case CongestionSetting::Mode::kNamed:
      if (result.before == setting.name) return result;
      if (const int err = try_set(fd, setting.name))
        throw make_error(
            ErrorCode::kConfig,
            "TUTTI_TCP_CONGESTION={} (Options::tcp_congestion) for {}: {}; unset it, or "
            "set auto or system",
            setting.name, who, refusal(setting.name, err));
      result.after = current(fd);
      return result;
  }
  return result;
}

std::vector<std::string> available_congestion_controls() {
  return read_words("/proc/sys/net/ipv4/tcp_available_congestion_control");
}

std::vector<std::string> allowed_congestion_controls() {
  return read_words("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
}

}  // namespace tutti::net
