#include "launcher/plan.hpp"

#include "core/error.hpp"

namespace tutti::launcher {

JobPlan plan_local(int np) {
  if (np < 1)
    throw make_error(ErrorCode::kInvalidArgument, "cannot plan {} ranks; use -np 1 or more", np);
  JobPlan plan;
  plan.slots.reserve(static_cast<size_t>(np));
  for (int r = 0; r < np; ++r) plan.slots.push_back(RankSlot{r, r, np, 0, 1, "localhost"});
  return plan;
}

}  // namespace tutti::launcher
