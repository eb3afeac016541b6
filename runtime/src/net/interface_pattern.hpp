// Which network interfaces a TUTTI_SOCKET_IFNAME value names, in the syntax NCCL and Gloo users
// know: "eth0" matches every interface whose name starts with eth0 (eth0, eth01), "eth,ib" is a
// list, a leading '^' excludes what follows ("^docker,lo"), a leading '=' (after the '^', if any)
// asks for exact names ("=eth0", "^=lo").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tutti::net {

struct InterfacePattern {
  std::vector<std::string> names;  // never empty
  bool exclude = false;            // '^': every interface except these
  bool exact = false;              // '=': whole names, not prefixes

  // Whether the interface called `name` is one the pattern selects.
  bool selects(std::string_view name) const;
  // The pattern as the user wrote it, normalized ("^=lo,docker0").
  std::string to_string() const;
};

// Parses a pattern; empty items of the list are skipped. Throws Error(kConfig) naming `setting`
// when no name is left ("", "^", "=,").
InterfacePattern parse_interface_pattern(std::string_view text, std::string_view setting);

}  // namespace tutti::net
