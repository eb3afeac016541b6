#include "kubexec/remote_command.hpp"

namespace tutti::kubexec {

std::string join_command(std::span<const std::string> command) {
  std::string joined;
  for (const std::string& word : command) {
    if (!joined.empty()) joined += ' ';
    joined += word;
  }
  return joined;
}

std::vector<std::string> kubectl_argv(const Config& config, const std::string& pod,
                                      const std::string& joined_command) {
  // -i forwards our stdin; POD comes right after exec so nothing can be read as a flag before it
  // (it is a validated DNS label and cannot start with '-').
  std::vector<std::string> argv = {config.kubectl, "exec", "-i", pod};
  if (!config.name_space.empty()) argv.insert(argv.end(), {"-n", config.name_space});
  if (!config.container.empty()) argv.insert(argv.end(), {"-c", config.container});
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", joined_command});
  return argv;
}

}  // namespace tutti::kubexec
