// Algorithm names and the per-call choice: kAuto lands here and asks the cost model
// (cost_model.hpp) for the cheapest algorithm on this call's placement. The environment override
// (TUTTI_ALGO) is read by the caller and never reaches this file.
#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>
#include <string>

#include "collectives/collectives.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/placement.hpp"
#include "collectives/selection_cache.hpp"
#include "collectives/settings.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::collectives {

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHalvingDoubling:
      return "hd";
    case Algorithm::kShm:
      return "shm";
    case Algorithm::kHierarchical:
      return "hier";
  }
  return "?";
}

Algorithm parse_algorithm(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kHalvingDoubling, Algorithm::kShm, Algorithm::kHierarchical}) {
    if (lower == to_string(a)) return a;
  }
  throw make_error(
      ErrorCode::kConfig,
      "unknown allreduce algorithm '{}'; set TUTTI_ALGO to auto, ring, tree, hd, shm or hier",
      name);
}

bool log_decision_table_once(const CostModel& model, const Placement& p) {
  static std::mutex mutex;
  static std::set<std::string> printed;
  const std::string table = decision_table(model, p);
  const std::string key = table.substr(0, table.find('\n'));
  {
    std::lock_guard lock(mutex);
    if (!printed.insert(key).second) return false;
  }
  log::debug("{}",
             std::string_view(table).substr(0, table.size() - 1));  // the log adds the newline
  return true;
}

Algorithm select_allreduce(const Context& ctx, size_t bytes) {
  if (ctx.size <= 1) return Algorithm::kRing;  // no communication at all; any algorithm will do
  const CostModel& model = *settings_of(ctx).model;
  SelectionCache uncached;  // for contexts without a communicator's cache
  SelectionCache& cache = ctx.selection != nullptr ? *ctx.selection : uncached;
  if (cache.last_bytes == bytes) return cache.last;
  if (!cache.placement) cache.placement = placement_of(ctx);
  if (!cache.logged) {
    if (ctx.rank == 0 && log::enabled(log::Level::kDebug))
      log_decision_table_once(model, *cache.placement);
    cache.logged = true;
  }
  cache.last = cheapest(model, bytes, *cache.placement);
  cache.last_bytes = bytes;
  return cache.last;
}

}  // namespace tutti::collectives
