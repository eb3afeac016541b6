// What the negotiation decides for one name, the same on every rank: run it (with every rank's
// spec where they may differ, and which ranks had joined), or fail it with one message.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/operation.hpp"
#include "tutti/error.hpp"

namespace tutti::engine {

struct Response {
  enum class Kind { kRun, kFail, kJoin };
  Kind kind = Kind::kRun;
  std::string name;
  OpSpec spec;  // the agreed spec (the first announcing rank's)
  // allgather and alltoall: each rank's own spec (rows, splits); empty for the other kinds.
  std::vector<OpSpec> per_rank;
  // Ranks that had joined when this ran: they contribute the op's identity (allreduce) or nothing
  // (allgather). Empty when none had.
  std::vector<int> joined;
  std::optional<Error> error;  // kFail
  int last_joined = -1;        // kJoin
  bool cached = false;         // ran from the response cache, without announcement

  const OpSpec& spec_of(int rank) const { return per_rank.empty() ? spec : per_rank[rank]; }
  bool has_joined(int rank) const;
};

}  // namespace tutti::engine
