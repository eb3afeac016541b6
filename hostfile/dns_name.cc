#include "hostfile/dns_name.hpp"

#include <fmt/format.h>

namespace tutti::hostfile {
namespace {

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

std::string describe_char(char c) {
  if (c == ' ') return "a space";
  if (c == '\n') return "a newline";
  if (c == '\t') return "a tab";
  if (c >= 'A' && c <= 'Z') return fmt::format("the uppercase letter '{}'", c);
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
    return fmt::format("the byte \\x{:02x}", static_cast<unsigned char>(c));
  return fmt::format("'{}'", c);
}

}  // namespace

std::string label_problem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > kMaxLabelLength)
    return fmt::format("it is {} characters long (at most {})", name.size(), kMaxLabelLength);
  for (char c : name) {
    if (!is_lower_alnum(c) && c != '-')
      return fmt::format("it contains {} (only a-z, 0-9 and '-' are allowed)", describe_char(c));
  }
  if (name.front() == '-' || name.back() == '-')
    return "it must start and end with a letter or digit";
  return {};
}

std::string subdomain_problem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > kMaxNameLength)
    return fmt::format("it is {} characters long (at most {})", name.size(), kMaxNameLength);
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    std::string_view label =
        name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
    if (std::string problem = label_problem(label); !problem.empty()) {
      if (label.empty())
        return "it has an empty label (two dots in a row, or a leading/trailing dot)";
      if (label.size() == name.size()) return problem;
      return fmt::format("its label '{}' is invalid: {}", printable(label), problem);
    }
    if (dot == std::string_view::npos) return {};
    start = dot + 1;
  }
}

std::string printable(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (out.size() >= 80) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '\\')
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

}  // namespace tutti::hostfile
