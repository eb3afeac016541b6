// The hierarchical allreduce on device buffers (TUTTI_DEVICE_ALLREDUCE=hier): NCCL reduce-scatter
// among this host's ranks (an NCCL communicator split by host), then, for each slice, our host
// allreduce across hosts among the ranks that hold the same slice (one per host, on pinned host
// buffers, through the host collectives and transport: TCP or MPI), then NCCL allgather on each
// host. Hosts must have the same number of ranks (path_for sends anything else to the ring).
#include <algorithm>

#include "collectives/collectives.hpp"
#include "collectives/device/device_collectives.hpp"
#include "collectives/group_transport.hpp"
#include "collectives/hierarchy.hpp"
#include "core/error.hpp"

namespace tutti::collectives {

namespace {

constexpr unsigned kCrossHostPhase = 2;

// The ranks holding local slice `slot`: the slot-th rank of every host, in host order.
std::vector<int> slice_holders(std::span<const int> host_of_rank, int slot) {
  std::vector<int> seen(host_of_rank.size(), 0);  // ranks met so far per host index
  std::vector<std::pair<int, int>> holders;       // (host, rank)
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    const int host = host_of_rank[r];
    if (seen[static_cast<size_t>(host)]++ == slot) holders.emplace_back(host, static_cast<int>(r));
  }
  std::sort(holders.begin(), holders.end());
  std::vector<int> ranks;
  for (auto [host, rank] : holders) ranks.push_back(rank);
  return ranks;
}

}  // namespace

void DeviceCollectives::hierarchical_allreduce(Context& ctx, const DeviceCall& call,
                                               const void* send, void* recv, size_t count,
                                               DataType type, ReduceOp op,
                                               const std::string& what) {
  device::DeviceApi& api = device::api();
  const device::StreamId stream = stream_.id();
  const Hierarchy h = hierarchy_of(ctx.host_of_rank, ctx.rank);
  device::NcclComm* local = nullptr;
  {
    std::lock_guard lock(nccl_mutex_);
    local = host_nccl_.get();
  }
  if (local == nullptr) {
    // Made on the first hierarchical call, which every rank makes (the path is agreed).
    auto made = nccl_->split(ctx.host_of_rank[static_cast<size_t>(ctx.rank)], ctx.rank,
                             std::chrono::duration_cast<std::chrono::milliseconds>(
                                 Deadline::after(init_timeout_).earlier(ctx.deadline).remaining()));
    // Every rank has a color (its host), so a split that gives none is broken, and must not be
    // used: the first H100 run got null here and crashed in the reduce-scatter below.
    if (!made)
      fail(ErrorCode::kDevice,
           fmt::format("rank {}: splitting the NCCL communicator by host (host {}) gave no "
                       "communicator; the hierarchical path cannot run (TUTTI_DEVICE_ALLREDUCE="
                       "ring avoids the split)",
                       ctx.rank, ctx.host_of_rank[static_cast<size_t>(ctx.rank)]));
    std::lock_guard lock(nccl_mutex_);
    host_nccl_ = std::move(made);
    if (aborted_) host_nccl_->abort();
    local = host_nccl_.get();
  }

  const size_t element = element_size(type);
  const size_t local_size = h.local.size();
  const size_t slice = (count + local_size - 1) / local_size;
  const size_t slice_begin = std::min(count, slice * static_cast<size_t>(h.local_index));
  const size_t slice_count = std::min(count, slice_begin + slice) - slice_begin;
  const bool floating_sum = is_floating(type) && (op == ReduceOp::kSum || op == ReduceOp::kAvg);
  const ReduceOp reduce_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;

  // The padded input (reduce_scatter wants equal slices); the padding's values are never read
  // back.
  auto* padded = static_cast<std::byte*>(scratch(ctx, call, 0, slice * local_size * element));
  auto* mine = static_cast<std::byte*>(scratch(ctx, call, 1, slice * element));
  api.copy_async(padded, send, count * element, stream);
  local->reduce_scatter(padded, mine, slice, type, reduce_op, floating_sum ? call.prescale : 1.0,
                        stream);
  void* host = pinned(ctx, call, std::max<size_t>(slice, 1) * element);
  if (slice_count > 0) api.copy_async(host, mine, slice_count * element, stream);
  // The host step needs the slice on the host: wait for it here (the caller's stream still waits
  // for the whole call through the done event at the end).
  api.record(done_.id(), stream);
  wait_on_host(ctx, call, done_.id(), what + " (on-host reduce-scatter)");

  const std::vector<int> holders = slice_holders(ctx.host_of_rank, h.local_index);
  if (holders.size() > 1) {
    const int index =
        static_cast<int>(std::find(holders.begin(), holders.end(), ctx.rank) - holders.begin());
    auto group = make_group_transport(ctx.transport, holders, index);
    Context g = group_context(ctx, *group, index, static_cast<int>(holders.size()),
                              phase_sequence(ctx.sequence, kCrossHostPhase));
    if (floating_sum) {
      g.postscale = call.postscale / (op == ReduceOp::kAvg ? ctx.size : 1);
    }
    collectives::allreduce(g, Algorithm::kAuto, host, host, slice_count, type, reduce_op);
  } else if (floating_sum && (call.postscale != 1.0 || op == ReduceOp::kAvg)) {
    // One host: the postscale still applies once, on the device.
    const double post = call.postscale / (op == ReduceOp::kAvg ? ctx.size : 1);
    if (slice_count > 0)
      api.reduce_async({.out = mine,
                        .a = mine,
                        .b = mine,
                        .count = slice_count,
                        .type = type,
                        .op = ReduceOp::kSum,
                        .post = post * 0.5},
                       stream);
  }
  if (holders.size() > 1 && slice_count > 0)
    api.copy_async(mine, host, slice_count * element, stream);
  local->all_gather(mine, padded, slice, type, stream);
  api.copy_async(recv, padded, count * element, stream);
}

}  // namespace tutti::collectives
