#include "collectives/placement.hpp"

#include <algorithm>

#include "collectives/selection_cache.hpp"
#include "collectives/settings.hpp"
#include "core/env.hpp"

namespace tutti::collectives {

Placement placement_of(const Context& ctx) {
  Placement p;
  p.ranks = ctx.size;
  p.max_local = ctx.size;
  if (ctx.host_of_rank.size() == static_cast<size_t>(ctx.size) && ctx.size > 0) {
    // Hosts are numbered densely from 0 by the communicator, so a count per index is enough.
    const int hosts = *std::max_element(ctx.host_of_rank.begin(), ctx.host_of_rank.end()) + 1;
    int max_local = 0;
    int distinct = 0;
    for (int h = 0; h < hosts; ++h) {
      const int n =
          static_cast<int>(std::count(ctx.host_of_rank.begin(), ctx.host_of_rank.end(), h));
      max_local = std::max(max_local, n);
      distinct += n > 0;
    }
    p.hosts = distinct;
    p.max_local = max_local;
  }
  p.window = ctx.transport.local_window() != nullptr;
  // With several hosts every rank has a TCP channel, with one host none has (unless
  // TUTTI_TRANSPORT=tcp, which makes them all TCP): every rank sees the same flat link. MPI
  // (TUTTI_TRANSPORT=mpi) is priced as a network link, like TCP.
  bool any_tcp = false;
  for (int peer = 0; peer < ctx.size && !any_tcp; ++peer)
    any_tcp = peer != ctx.rank && ctx.transport.channel(peer).kind() != TransportKind::kShm;
  const TransportKind transport = settings_of(ctx).options.transport;
  p.flat = any_tcp ? Link::kTcp : Link::kShm;
  // From the setting, not from this rank's channels: a rank alone on its host has no local
  // channel to look at, and every rank must price the same way.
  p.local = transport == TransportKind::kTcp || transport == TransportKind::kMpi ? Link::kTcp
                                                                                 : Link::kShm;
  p.transport = env::choice_name("TUTTI_TRANSPORT", static_cast<int>(transport));
  p.cpu_share = ctx.cpu_share.ranks;
  p.leaders_cpu_share = ctx.cpu_share.leaders;
  return p;
}

namespace {

// The communicator's cached placement (worked out once), or `scratch` filled for a context
// without a cache.
const Placement& known_placement(const Context& ctx, Placement& scratch) {
  if (ctx.selection == nullptr) return scratch = placement_of(ctx);
  if (!ctx.selection->placement) ctx.selection->placement = placement_of(ctx);
  return *ctx.selection->placement;
}

}  // namespace

bool recursive_doubling_pays(const Context& ctx, size_t count, size_t element_bytes) {
  Placement scratch;
  return recursive_doubling_pays(*settings_of(ctx).model, count, element_bytes,
                                 known_placement(ctx, scratch));
}

size_t ring_slab_bytes(const Context& ctx) {
  constexpr size_t kSegmentsPerSlab = 16;
  // Measured only for 2 ranks: at 3 and 4 ranks on 2 vCPUs slabs of 4-8 MiB changed a 64 MiB
  // call by -2% to +7%, and those rings grow their segments instead (ring_segment_bytes).
  if (ctx.size != 2 || settings_of(ctx).options.transport == TransportKind::kMpi) return 0;
  Placement scratch;
  return known_placement(ctx, scratch).flat == Link::kTcp ? kSegmentsPerSlab * ctx.segment_bytes
                                                          : 0;
}

size_t ring_segment_bytes(const Context& ctx, size_t block_bytes) {
  constexpr size_t kSegmentsPerBlock = 8;
  // Two ranks keep the configured segment: between pods on 2 vCPUs their in-place 256 MiB call
  // lost 15-20% with grown segments while 4 ranks gained about 10% (docs/PERFORMANCE.md).
  if (ctx.size <= 2) return ctx.segment_bytes;
  const size_t grown = std::min(ctx.tcp_segment_max_bytes, block_bytes / kSegmentsPerBlock);
  if (grown <= ctx.segment_bytes) return ctx.segment_bytes;
  if (settings_of(ctx).options.transport == TransportKind::kMpi) return ctx.segment_bytes;
  Placement scratch;
  return known_placement(ctx, scratch).flat == Link::kTcp ? grown : ctx.segment_bytes;
}

}  // namespace tutti::collectives
