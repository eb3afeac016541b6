#include "hostfile/hostfile.hpp"

namespace tutti::hostfile {

long Hostfile::total_slots() const {
  long total = 0;
  for (const Host& h : hosts) total += h.slots;
  return total;
}

}  // namespace tutti::hostfile
