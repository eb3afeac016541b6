// Algorithm names and the per-call choice: kAuto lands here and asks the cost model
// (cost_model.hpp) for the cheapest algorithm on this call's placement. The environment override
// (TUTTI_ALGO) is read by the caller and never reaches this file.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "collectives/allreduce_registry.hpp"
#include "collectives/collectives.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/placement.hpp"
#include "collectives/selection_cache.hpp"
#include "collectives/settings.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::collectives {

std::string_view to_string(Algorithm a) {
  if (a == Algorithm::kAuto) return "auto";
  const AllreduceAlgorithm* entry = find_allreduce(a);
  return entry != nullptr ? entry->name : "?";
}

Algorithm parse_algorithm(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "auto") return Algorithm::kAuto;
  std::string names = "auto";
  for (const AllreduceAlgorithm& a : allreduce_algorithms()) {
    if (lower == a.name) return a.id;
    names += fmt::format(", {}", a.name);
  }
  throw make_error(ErrorCode::kConfig,
                   "unknown allreduce algorithm '{}'; set TUTTI_ALGO to one of {}", name, names);
}

SelectionTable selection_table(const CostModel& model, const Placement& p) {
  // Sampled at 16 steps per power of two up to 1 TiB (beyond any one call's buffer); where two
  // samples' picks differ, bisection finds the exact size. A pick that changes and changes back
  // between two samples (within 1/16 of a size) would be missed: the models' crossovers are far
  // apart, one per pair of algorithms at most.
  constexpr int kLastPower = 40;
  constexpr size_t kSteps = 16;
  SelectionTable table;
  size_t at = 1;
  Algorithm pick = cheapest(model, at, p);
  for (int power = 0; power < kLastPower; ++power) {
    const size_t base = size_t{1} << power;
    for (size_t step = 1; step <= kSteps; ++step) {
      const size_t next = base + base * step / kSteps;
      if (next <= at) continue;
      while (cheapest(model, next, p) != pick) {
        size_t same = at, differs = next;  // cheapest(same) == pick != cheapest(differs)
        while (differs - same > 1) {
          const size_t mid = same + (differs - same) / 2;
          (cheapest(model, mid, p) == pick ? same : differs) = mid;
        }
        table.upto.push_back({same, pick});
        pick = cheapest(model, differs, p);
        at = differs;
      }
      at = next;
    }
  }
  table.upto.push_back({SIZE_MAX, pick});
  return table;
}

Algorithm SelectionTable::pick(size_t bytes) const {
  const auto it = std::lower_bound(upto.begin(), upto.end(), bytes,
                                   [](const auto& run, size_t b) { return run.first < b; });
  return it != upto.end() ? it->second : upto.back().second;
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
  if (ctx.selection == nullptr) return cheapest(model, bytes, placement_of(ctx));
  SelectionCache& cache = *ctx.selection;
  if (!cache.table) {
    if (!cache.placement) cache.placement = placement_of(ctx);
    if (ctx.rank == 0 && log::enabled(log::Level::kDebug))
      log_decision_table_once(model, *cache.placement);
    cache.table = selection_table(model, *cache.placement);
  }
  ++cache.lookups;
  return cache.table->pick(bytes);
}

}  // namespace tutti::collectives
