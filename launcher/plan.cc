#include "launcher/plan.hpp"

#include "core/error.hpp"

namespace tutti::launcher {

std::vector<std::string> JobPlan::hosts() const {
  std::vector<std::string> out;
  for (const RankSlot& s : slots)
    if (out.empty() || out.back() != s.host) out.push_back(s.host);
  return out;
}

JobPlan plan_local(int np) {
  if (np < 1)
    throw make_error(ErrorCode::kInvalidArgument, "cannot plan {} ranks; use -np 1 or more", np);
  JobPlan plan;
  plan.slots.reserve(static_cast<size_t>(np));
  for (int r = 0; r < np; ++r) plan.slots.push_back(RankSlot{r, r, np, 0, 1, "localhost"});
  return plan;
}

JobPlan plan_hosts(const hostfile::Hostfile& hosts, int np) {
  long total = hosts.total_slots();
  if (hosts.hosts.empty() || total < 1)
    throw make_error(ErrorCode::kConfig, "the host list has no slots; name at least one host");
  if (np < 0) throw make_error(ErrorCode::kConfig, "-np {} is not a rank count", np);
  if (np > total)
    throw make_error(ErrorCode::kConfig,
                     "-np {} asks for more ranks than the {} slot(s) of {} host(s); add hosts or "
                     "slots, or lower -np",
                     np, total, hosts.hosts.size());
  int want = np == 0 ? static_cast<int>(total) : np;

  JobPlan plan;
  plan.slots.reserve(static_cast<size_t>(want));
  int cross = 0;
  for (const hostfile::Host& h : hosts.hosts) {
    int here = std::min(h.slots, want - plan.world_size());
    if (here <= 0) break;
    for (int l = 0; l < here; ++l)
      plan.slots.push_back(RankSlot{plan.world_size(), l, here, cross, 0, h.name});
    ++cross;
  }
  for (RankSlot& s : plan.slots) s.cross_size = cross;
  return plan;
}

}  // namespace tutti::launcher
