// The cost model's view of a collective's ranks (cost_model.hpp's Placement), read off a Context:
// hosts from ctx.host_of_rank, the window and channel kinds from the transport, TUTTI_TRANSPORT
// from the environment. Every rank derives the same placement, so every rank picks the same
// algorithm.
#pragma once

#include "collectives/context.hpp"
#include "collectives/cost_model.hpp"

namespace tutti::collectives {

Placement placement_of(const Context& ctx);

// The pipeline segment of a ring whose largest chunk is `block_bytes`: ctx.segment_bytes, or where
// a ring of more than 2 ranks crosses TCP links (the placement's flat link, TUTTI_TRANSPORT not
// mpi) an eighth of the block, up to ctx.tcp_segment_max_bytes. Each segment is one socket write
// and one wake-up of the receiver, so large messages go in fewer, larger writes. Every rank gets
// the same value (the placement and the chunks are the same everywhere), so sender and receiver cut
// chunks alike.
size_t ring_segment_bytes(const Context& ctx, size_t block_bytes);

// The slab a 2-rank ring allreduce over TCP works through at a time, as one ring after another
// (0: the whole message in one ring): 16 segments, 4 MiB by default. A slab's data, its staging
// and the sockets' buffers stay in cache; one ring over 16-64 MiB between 2 ranks ran 1.3-1.4x
// slower than the same bytes in 2-4 MiB rings (docs/PERFORMANCE.md). Every rank gets the same
// value.
size_t ring_slab_bytes(const Context& ctx);

// Whether the halving-doubling allreduce of `count` elements exchanges whole vectors (recursive
// doubling) on this context: cost_model.hpp's rule on its placement, the same on every rank.
bool recursive_doubling_pays(const Context& ctx, size_t count, size_t element_bytes);

// Logs decision_table(model, p) at debug level unless this process already logged one for the
// same placement; true when it logged.
bool log_decision_table_once(const CostModel& model, const Placement& p);

}  // namespace tutti::collectives
