// The hostfile model shared by tutti-hostfile (which writes hostfiles) and tuttirun (which reads
// them): an ordered list of hosts, each with a slot count, as Open MPI and MPICH understand it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tutti::hostfile {

// Slot counts above this are typos, and keeping them small keeps every sum far from overflow.
inline constexpr int kMaxSlots = 1 << 20;

struct Host {
  std::string name;              // a DNS-1123 subdomain: pod name, FQDN or IPv4 address
  int slots = 1;                 // ranks to place on this host
  std::optional<int> max_slots;  // Open MPI's oversubscription cap; >= slots when set

  bool operator==(const Host&) const = default;
};

struct Hostfile {
  std::vector<Host> hosts;  // in file order, names unique

  long total_slots() const;
  bool operator==(const Hostfile&) const = default;
};

}  // namespace tutti::hostfile
