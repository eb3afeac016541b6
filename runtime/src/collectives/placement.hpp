// The cost model's view of a collective's ranks (cost_model.hpp's Placement), read off a Context:
// hosts from ctx.host_of_rank, the window and channel kinds from the transport, TUTTI_TRANSPORT
// from the environment. Every rank derives the same placement, so every rank picks the same
// algorithm.
#pragma once

#include "collectives/context.hpp"
#include "collectives/cost_model.hpp"

namespace tutti::collectives {

Placement placement_of(const Context& ctx);

// Logs decision_table(model, p) at debug level unless this process already logged one for the
// same placement; true when it logged.
bool log_decision_table_once(const CostModel& model, const Placement& p);

}  // namespace tutti::collectives
