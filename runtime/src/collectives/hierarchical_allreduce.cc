// Hierarchical allreduce for ranks spread over several hosts: reduce onto one leader per host over
// the host's shared-memory channels, allreduce among the leaders across hosts (the flat algorithm
// the cost model picks for that many hosts), broadcast back on each host.
//
// One leader per host rather than every local rank on its own slice: the leader scheme works for
// any number of ranks per host (slices only line up across hosts when every host has the same
// count), and on these machines (2 vCPUs per host) more local ranks moving slices in parallel add
// no CPU to move or reduce them with, only more cross-host messages and their latency.
#include <algorithm>
#include <vector>

#include "collectives/call_data.hpp"
#include "collectives/checks.hpp"
#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"
#include "collectives/group_transport.hpp"
#include "collectives/hierarchy.hpp"
#include "collectives/scratch_slots.hpp"
#include "core/error.hpp"
#include "reduce/reduce.hpp"

namespace tutti::collectives {
namespace {

constexpr std::string_view kWhat = "hierarchical allreduce (on-host reduce)";
// How far ahead a chain member posts receives for its successor's segments: up to 4 MiB (the
// engine's default fusion threshold, so a fused step goes through without a stash), and no more
// than 64 receives (tiny segments would otherwise post thousands).
constexpr size_t kChainAheadBytes = 4 << 20;
constexpr size_t kChainAheadSegments = 64;
// From this size on, a chain member tells its successor when its receives are posted, and the
// successor sends nothing before. A segment that arrives earlier, while the member still waits in
// something else (the previous call's broadcast, the engine's negotiation), is read into the
// channel's stash there and copied again once its receive is posted: one more pass over the call's
// bytes, on the leader, which the whole call waits for. The word costs one message's latency,
// which is what a segment of 256 KiB costs to copy.
constexpr size_t kChainReadyBytes = 256 << 10;
enum Phase : unsigned { kLocalReduce = 0, kCross = 1, kLocalBroadcast = 2 };

// Reduces every group member's send side of `data` (count elements) into its recv side at
// member 0, along the chain last -> ... -> 1 -> 0, in segments: each member receives its
// successor's partial sum of a segment, adds its own input and passes it on, while the next
// segment is already arriving. Members other than 0 use their recv side as the outgoing partial
// (the broadcast overwrites it).
void chain_reduce(Context& group, const CallData& data, size_t count, DataType type, ReduceOp op) {
  const size_t esize = element_size(type);
  const int index = group.rank;
  if (group.size == 1) {
    data.each(0, count * esize, [&](const std::byte* in, std::byte* out, size_t, size_t n) {
      if (group.scaled())
        reduce::scale(type, out, in, group.prescale * group.postscale, n / esize);
      else
        copy_unless_same(in, out, n);
    });
    return;
  }
  const size_t per = segment_elements(group.segment_bytes, esize);
  const size_t segments = segment_count(count, per);
  const auto tag = transport::make_tag(group.sequence, 0);
  auto seg_bytes = [&](size_t s) { return std::min(per, count - s * per) * esize; };
  std::vector<transport::Request> sends;
  sends.reserve(segments);
  transport::Channel* down = index > 0 ? &group.transport.channel(index - 1) : nullptr;

  // The predecessor's word that its receives are posted (large calls only).
  const bool handshake = count * esize >= kChainReadyBytes;
  const auto ready_tag = transport::make_tag(group.sequence, 1);
  bool awaiting = down && handshake;
  transport::Request ready;
  if (awaiting) ready = down->irecv(ready_tag, {});
  auto await_ready = [&] {
    if (!awaiting) return;
    group.transport.wait(std::span(&ready, 1), group.deadline, kWhat);
    awaiting = false;
  };

  if (index == group.size - 1) {
    // The chain's tail only sends its input.
    await_ready();
    for (size_t s = 0; s < segments; ++s)
      sends.push_back(data.isend(*down, tag, CallData::Side::kSend, s * per * esize, seg_bytes(s)));
    group.transport.wait(sends, group.deadline, kWhat);
    return;
  }

  // The successor sends every segment at once: each needs a posted receive when it arrives, or
  // the channel stashes it and copies it again. Receives are posted ahead (kChainAheadBytes),
  // each slot reposted once its segment is reduced.
  transport::Channel& up = group.transport.channel(index + 1);
  const size_t slots = std::min(
      segments, std::clamp<size_t>(kChainAheadBytes / (per * esize), 2, kChainAheadSegments));
  std::span<std::byte> staging = group.scratch.get(kStagingSlot, slots * per * esize);
  auto slot = [&](size_t s) { return staging.data() + (s % slots) * per * esize; };
  std::vector<transport::Request> incoming(slots);
  for (size_t s = 0; s < slots; ++s) incoming[s] = up.irecv(tag, {slot(s), seg_bytes(s)});
  if (handshake) sends.push_back(up.isend(ready_tag, {}));
  for (size_t s = 0; s < segments; ++s) {
    group.transport.wait(std::span(&incoming[s % slots], 1), group.deadline, kWhat);
    const std::byte* arrived = slot(s);
    const size_t offset = s * per * esize;
    data.each(offset, seg_bytes(s), [&](const std::byte* in, std::byte* out, size_t at, size_t n) {
      if (group.scaled()) {
        // The tail sends its raw input, every other member a partial sum; member 0's is final.
        const bool raw = index + 1 == group.size - 1;
        reduce::combine_scaled(type, out, in, group.prescale, arrived + at,
                               raw ? group.prescale : 1.0, index == 0 ? group.postscale : 1.0,
                               n / esize);
      } else {
        reduce::combine(type, op, out, in, arrived + at, n / esize);
      }
    });
    if (down) {
      await_ready();
      sends.push_back(data.isend(*down, tag, CallData::Side::kRecv, offset, seg_bytes(s)));
    }
    // Reduced: segment s + slots may land in its slot.
    if (s + slots < segments)
      incoming[s % slots] = up.irecv(tag, {slot(s + slots), seg_bytes(s + slots)});
  }
  group.transport.wait(sends, group.deadline, kWhat);
}

// The three phases over `data`; `cross(g)` allreduces the recv side among the leaders.
template <typename Cross>
void hierarchical(Context& ctx, const CallData& data, size_t count, DataType type, ReduceOp op,
                  Cross&& cross) {
  if (ctx.host_of_rank.size() != static_cast<size_t>(ctx.size)) {
    throw make_error(ErrorCode::kConfig,
                     "TUTTI_ALGO=hier on rank {}: this communicator does not know which host each "
                     "of its {} ranks is on; use TUTTI_ALGO=auto, ring, tree or hd",
                     ctx.rank, ctx.size);
  }
  const Hierarchy h = hierarchy_of(ctx.host_of_rank, ctx.rank);
  auto phase_context = [&](transport::Transport& t, std::span<const int> members, int index,
                           Phase phase) {
    return group_context(ctx, t, index, static_cast<int>(members.size()),
                         phase_sequence(ctx.sequence, phase));
  };

  auto local = make_group_transport(ctx.transport, h.local, h.local_index);
  {
    Context g = phase_context(*local, h.local, h.local_index, kLocalReduce);
    // The postscale goes where the result becomes final: the leaders' allreduce, if there is one.
    const bool cross_hosts = h.leaders.size() > 1;
    g.prescale = ctx.prescale;
    g.postscale = cross_hosts ? 1.0 : ctx.postscale;
    chain_reduce(g, data, count, type, op);
  }
  if (h.leader_index >= 0 && h.leaders.size() > 1) {
    auto leaders = make_group_transport(ctx.transport, h.leaders, h.leader_index);
    Context g = phase_context(*leaders, h.leaders, h.leader_index, kCross);
    // Every leader on a host of its own: selection prices the leaders as a flat world.
    std::vector<int> own_hosts(h.leaders.size());
    for (size_t i = 0; i < own_hosts.size(); ++i) own_hosts[i] = static_cast<int>(i);
    g.host_of_rank = own_hosts;
    // One rank per host is busy in this phase: the leaders share the machines' CPUs between them.
    g.cpu_share = CpuShare{ctx.cpu_share.leaders, ctx.cpu_share.leaders};
    g.postscale = ctx.postscale;
    cross(g);
  }
  if (h.local.size() > 1) {
    Context g = phase_context(*local, h.local, h.local_index, kLocalBroadcast);
    broadcast_data(g, data, 0);
  }
}

}  // namespace

void hierarchical_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                            ReduceOp op) {
  const CallData data(send, recv, count * element_size(type));
  hierarchical(ctx, data, count, type, op,
               [&](Context& g) { allreduce(g, Algorithm::kAuto, recv, recv, count, type, op); });
}

bool hierarchical_takes_pieces(const Context& ctx) {
  if (ctx.host_of_rank.size() != static_cast<size_t>(ctx.size)) return false;
  // The channels to the ranks of this rank's host (no Hierarchy: the call makes its own).
  const int host = ctx.host_of_rank[static_cast<size_t>(ctx.rank)];
  for (int r = 0; r < ctx.size; ++r)
    if (r != ctx.rank && ctx.host_of_rank[static_cast<size_t>(r)] == host &&
        !ctx.transport.channel(r).takes_pieces())
      return false;
  return true;
}

void hierarchical_allreduce_segments(Context& ctx, std::span<const Segment> tensors, DataType type,
                                     ReduceOp op, std::vector<std::byte>& pack) {
  const size_t es = element_size(type);
  const CallData data(tensors, es);
  size_t count = 0;
  std::vector<Segment> results;  // the leaders reduce the local sums in place
  results.reserve(tensors.size());
  for (const Segment& s : tensors) {
    count += s.count;
    results.push_back({s.recv, s.recv, s.count});
  }
  hierarchical(ctx, data, count, type, op, [&](Context& g) {
    allreduce_segments(g, Algorithm::kAuto, results, type, op, pack);
  });
}

}  // namespace tutti::collectives
