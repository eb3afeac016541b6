// Reading hostfiles in every format tutti-hostfile writes, so tuttirun accepts what Open MPI,
// MPICH and Intel MPI users already have, in any mix:
//   host slots=N [max_slots=M]   Open MPI ("max-slots" also accepted; blanks around '=' too)
//   host:N                       MPICH / Intel MPI (Hydra)
//   host                         plain: one slot
// '#' starts a comment (whole line or trailing); blank lines are skipped.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "hostfile/hostfile.hpp"

namespace tutti::hostfile {

// Throws tutti::Error(kConfig) "SOURCE:LINE: reason" on the first bad line: a host that is not a
// DNS-1123 name, slots or max_slots that are not a positive integer, max_slots below slots, a
// duplicate host (naming the line it first appeared on), an unknown key, or no host at all.
// `source` names the input in messages (a path, or "<stdin>").
Hostfile parse(std::string_view text, std::string_view source);

// Reads and parses a file; a file that cannot be read (missing, a directory, larger than
// kMaxInputBytes) is kConfig naming the path.
Hostfile read_file(const std::string& path);

// Hostfiles and pods files are small; a bigger input is a mistake (a wrong path, /dev/zero) and is
// refused instead of filling memory.
inline constexpr size_t kMaxInputBytes = 16 << 20;

// All of `in` up to kMaxInputBytes; kConfig naming `source` when it is longer or unreadable.
std::string read_limited(std::istream& in, std::string_view source);

}  // namespace tutti::hostfile
