// tutti-hostfile's command line, apart from main() so the unit tests drive it with strings.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tutti::hostfile {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;  // a hostfile or pods file is invalid, or I/O failed
inline constexpr int kExitUsage =
    2;  // bad or conflicting options, invalid names on the command line

// args excludes argv[0]. `in` is read for "--pods-file -"; the hostfile goes to `out` unless
// --output is given; messages go to `err`. Returns the exit code; never throws for user errors.
int run_cli(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
            std::ostream& err);

}  // namespace tutti::hostfile
