// Finds the program a rank runs before anything is forked, so that "command not found" is one clear
// message from tuttirun (exit 127, like a shell) instead of N identical failures from the ranks.
#pragma once

#include <string>

namespace tutti::launcher {

struct CommandLookup {
  std::string path;     // absolute or relative path to execve, when found
  std::string problem;  // why not, naming the command; empty when found

  bool found() const { return problem.empty(); }
};

// A name with a '/' is taken as a path; otherwise each directory of path_env is searched like
// execvp does (an empty entry means the current directory).
CommandLookup find_executable(const std::string& name, const std::string& path_env);

}  // namespace tutti::launcher
