#include "launcher/command_lookup.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace tutti::launcher {
namespace {

// Empty when `path` can be executed, else the reason.
std::string why_not_executable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (::access(path.c_str(), X_OK) != 0)
    return fmt::format("is not executable ({})", std::strerror(errno));
  return "";
}

}  // namespace

CommandLookup find_executable(const std::string& name, const std::string& path_env) {
  if (name.empty()) return {"", "tuttirun: the command is an empty string"};
  if (name.find('/') != std::string::npos) {
    std::string why = why_not_executable(name);
    if (why.empty()) return {name, ""};
    return {"", fmt::format("tuttirun: cannot run '{}': {}", name, why)};
  }
  std::optional<std::string> first_problem;
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t colon = path_env.find(':', start);
    if (colon == std::string::npos) colon = path_env.size();
    std::string dir = path_env.substr(start, colon - start);
    std::string candidate = dir.empty() ? name : dir + "/" + name;
    std::string why = why_not_executable(candidate);
    if (why.empty()) return {dir.empty() ? "./" + name : candidate, ""};
    // Remember a file that exists but cannot run: that is a more useful message than "not found".
    if (!first_problem && ::access(candidate.c_str(), F_OK) == 0)
      first_problem = fmt::format("tuttirun: cannot run '{}': {} {}", name, candidate, why);
    start = colon + 1;
  }
  if (first_problem) return {"", *first_problem};
  return {"", fmt::format("tuttirun: {}: command not found (searched PATH={})", name, path_env)};
}

}  // namespace tutti::launcher
