#include "hostfile/parse.hpp"

#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "hostfile/dns_name.hpp"
#include "hostfile/lines.hpp"

namespace tutti::hostfile {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// "slots = 4" and "slots= 4" mean "slots=4" to Open MPI; dropping the blanks around '=' lets the
// rest of the parser split on blanks alone.
std::string squeeze_around_equals(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (is_space(c)) {
      size_t j = i;
      while (j < line.size() && is_space(line[j])) ++j;
      bool before_equals = j < line.size() && line[j] == '=';
      bool after_equals = !out.empty() && out.back() == '=';
      if (!before_equals && !after_equals) out += ' ';
      i = j - 1;
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<std::string_view> split_blanks(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

class LineParser {
 public:
  LineParser(std::string_view source, int line) : source_(source), line_(line) {}

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw make_error(ErrorCode::kConfig, "{}:{}: {}", source_, line_,
                     fmt::format(format, std::forward<Args>(args)...));
  }

  int count(std::string_view key, std::string_view text) const {
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      fail("{} '{}' is not a whole number; write e.g. {}=4", key, printable(text), key);
    if (value <= 0) fail("{}={} must be at least 1", key, value);
    if (value > kMaxSlots) fail("{}={} is more than {}; is it a typo?", key, value, kMaxSlots);
    return value;
  }

  Host host_line(std::string_view line) const {
    std::string squeezed = squeeze_around_equals(line);
    std::vector<std::string_view> tokens = split_blanks(squeezed);
    Host host;
    std::string_view name = tokens.front();
    std::optional<int> slots;
    if (size_t colon = name.find(':'); colon != std::string_view::npos) {
      std::string_view count_text = name.substr(colon + 1);
      name = name.substr(0, colon);
      if (count_text.find(':') != std::string_view::npos)
        fail("'{}': only host:N is understood (no interface or other fields after the count)",
             printable(tokens.front()));
      slots = count("slots", count_text);
    }
    if (std::string problem = subdomain_problem(name); !problem.empty())
      fail("host '{}' is not a valid Kubernetes (DNS-1123) name: {}", printable(name), problem);
    host.name = std::string(name);
    for (size_t i = 1; i < tokens.size(); ++i) {
      std::string_view token = tokens[i];
      size_t eq = token.find('=');
      if (eq == std::string_view::npos)
        fail("unexpected '{}' after host {}: expected key=value (slots=N or max_slots=N)",
             printable(token), host.name);
      std::string_view key = token.substr(0, eq);
      std::string_view value = token.substr(eq + 1);
      if (key == "slots") {
        if (slots) fail("slots given twice for host {}", host.name);
        slots = count("slots", value);
      } else if (key == "max_slots" || key == "max-slots") {
        if (host.max_slots) fail("max_slots given twice for host {}", host.name);
        host.max_slots = count("max_slots", value);
      } else {
        fail("unknown key '{}' for host {} (known: slots, max_slots)", printable(key), host.name);
      }
    }
    host.slots = slots.value_or(1);
    if (host.max_slots && *host.max_slots < host.slots)
      fail("host {} has max_slots={} below slots={}", host.name, *host.max_slots, host.slots);
    return host;
  }

 private:
  std::string_view source_;
  int line_;
};

}  // namespace

Hostfile parse(std::string_view text, std::string_view source) {
  Hostfile result;
  std::map<std::string, int, std::less<>> first_line;  // host -> line it appeared on
  for_each_line(text, [&](std::string_view line, int line_number) {
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    if (line.empty()) return;
    LineParser parser(source, line_number);
    Host host = parser.host_line(line);
    if (auto it = first_line.find(host.name); it != first_line.end())
      parser.fail("host {} is listed again (first on line {}); give it one line with slots=N",
                  host.name, it->second);
    first_line.emplace(host.name, line_number);
    result.hosts.push_back(std::move(host));
  });
  if (result.hosts.empty())
    throw make_error(ErrorCode::kConfig, "{}: no hosts (the file is empty or only comments)",
                     source);
  return result;
}

std::string read_limited(std::istream& in, std::string_view source) {
  std::string text;
  std::array<char, 65536> chunk;
  while (in) {
    in.read(chunk.data(), chunk.size());
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxInputBytes)
      throw make_error(ErrorCode::kConfig, "{} is larger than {} MiB; is it the right file?",
                       source, kMaxInputBytes >> 20);
  }
  if (in.bad()) throw make_error(ErrorCode::kConfig, "error while reading {}", source);
  return text;
}

Hostfile read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw make_error(ErrorCode::kConfig, "hostfile {} is a directory; give the file inside it",
                     path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw make_error(ErrorCode::kConfig,
                     "cannot read hostfile {}: it does not exist or is not readable", path);
  return parse(read_limited(in, path), path);
}

}  // namespace tutti::hostfile
