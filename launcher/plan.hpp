// The plan: which rank runs where, with its local and cross (host) coordinates. Local mode puts
// every rank on this host; hostfiles and pods will add more hosts through the same RankSlot shape.
#pragma once

#include <string>
#include <vector>

namespace tutti::launcher {

struct RankSlot {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;  // index of the slot's host among the job's hosts
  int cross_size = 1;
  std::string host;  // "localhost" in local mode
};

struct JobPlan {
  std::vector<RankSlot> slots;  // indexed by rank
  int world_size() const { return static_cast<int>(slots.size()); }
};

// np ranks, all on this host: local rank == rank.
JobPlan plan_local(int np);

}  // namespace tutti::launcher
