// Where the ranks of a collective live, as the hierarchical allreduce and the cost model need it:
// which ranks share this rank's host, one leader per host (its lowest rank), and the sizes that
// the cost model prices (hosts, the most ranks on one host).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "transport/tag.hpp"

namespace tutti::collectives {

struct Hierarchy {
  std::vector<int> local;    // world ranks on this rank's host, ascending; local[0] is the leader
  std::vector<int> leaders;  // the lowest rank of every host, in host order
  int local_index = 0;       // this rank's index in `local`
  int leader_index = -1;     // this rank's index in `leaders`, -1 when it leads no host
  int max_local = 1;         // the most ranks any host has
  bool uniform = true;       // every host has the same number of ranks
};

// From host_of_rank (see Context); throws Error(kInternal) when it does not cover `size` ranks.
Hierarchy hierarchy_of(std::span<const int> host_of_rank, int rank);

// A sequence number of its own for each phase of a composite collective, so the phases' tags never
// match each other (two phases may use the same channel) nor any plain collective's: the phase flag
// puts them in a half of the tag's sequence space that plain calls never use (transport/tag.hpp).
inline uint64_t phase_sequence(uint64_t sequence, unsigned phase) {
  return transport::kPhaseFlag | (sequence << 2) | (phase & 3u);
}

}  // namespace tutti::collectives
