// The collectives beyond allreduce/broadcast/allgather/reduce_scatter: each one a signature (what
// every rank must agree on) and a call into collectives/.
#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"

namespace tutti::comm {
namespace {

uint64_t sum_of(std::span<const size_t> counts) {
  uint64_t total = 0;
  for (size_t c : counts) total += c;  // overflow is refused inside the collective
  return total;
}

int32_t digest_of(std::span<const size_t> counts) {
  static_assert(sizeof(size_t) == sizeof(uint64_t));
  return transport::counts_digest(reinterpret_cast<const uint64_t*>(counts.data()), counts.size());
}

}  // namespace

void Communicator::reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                          int root, const CallOptions& call) {
  refuse_device("reduce", {send, recv});
  run("reduce", signature(transport::CallKind::kReduce, count, type, static_cast<int>(op), root),
      call, [&](collectives::Context& ctx) {
        collectives::reduce(ctx, send, recv, count, type, op, root);
      });
}

void Communicator::gather(const void* send, void* recv, size_t count, DataType type, int root,
                          const CallOptions& call) {
  const std::vector<size_t> counts(static_cast<size_t>(size_), count);
  gatherv(send, recv, counts, type, root, call);
}

void Communicator::gatherv(const void* send, void* recv, std::span<const size_t> counts,
                           DataType type, int root, const CallOptions& call) {
  refuse_device("gather", {send, recv});
  run("gather", signature(transport::CallKind::kGather, sum_of(counts), type, -1, root), call,
      [&](collectives::Context& ctx) {
        collectives::gatherv(ctx, send, recv, counts, type, root);
      });
}

void Communicator::scatter(const void* send, void* recv, size_t count, DataType type, int root,
                           const CallOptions& call) {
  const std::vector<size_t> counts(static_cast<size_t>(size_), count);
  scatterv(send, recv, counts, type, root, call);
}

void Communicator::scatterv(const void* send, void* recv, std::span<const size_t> counts,
                            DataType type, int root, const CallOptions& call) {
  refuse_device("scatter", {send, recv});
  run("scatter", signature(transport::CallKind::kScatter, sum_of(counts), type, -1, root), call,
      [&](collectives::Context& ctx) {
        collectives::scatterv(ctx, send, recv, counts, type, root);
      });
}

void Communicator::allgatherv(const void* send, void* recv, std::span<const size_t> counts,
                              DataType type, const CallOptions& call) {
  refuse_device("allgatherv", {send, recv});
  run("allgatherv",
      signature(transport::CallKind::kAllgatherv, sum_of(counts), type, -1, digest_of(counts)),
      call,
      [&](collectives::Context& ctx) { collectives::allgatherv(ctx, send, recv, counts, type); });
}

void Communicator::reduce_scatter_v(const void* send, void* recv, std::span<const size_t> counts,
                                    DataType type, ReduceOp op, const CallOptions& call) {
  refuse_device("reduce_scatter_v", {send, recv});
  run("reduce_scatter_v",
      signature(transport::CallKind::kReduceScatterV, sum_of(counts), type, static_cast<int>(op),
                digest_of(counts)),
      call, [&](collectives::Context& ctx) {
        collectives::reduce_scatter_v(ctx, send, recv, counts, type, op);
      });
}

void Communicator::alltoall(const void* send, void* recv, size_t count, DataType type,
                            const CallOptions& call) {
  const std::vector<size_t> counts(static_cast<size_t>(size_), count);
  refuse_device("alltoall", {send, recv});
  run("alltoall", signature(transport::CallKind::kAlltoall, count, type, -1, -1), call,
      [&](collectives::Context& ctx) {
        collectives::alltoallv(ctx, send, counts, recv, counts, type);
      });
}

void Communicator::alltoallv(const void* send, std::span<const size_t> send_counts, void* recv,
                             std::span<const size_t> recv_counts, DataType type,
                             const CallOptions& call) {
  refuse_device("alltoallv", {send, recv});
  run("alltoallv", signature(transport::CallKind::kAlltoallv, 0, type, -1, -1), call,
      [&](collectives::Context& ctx) {
        collectives::alltoallv(ctx, send, send_counts, recv, recv_counts, type);
      });
}

}  // namespace tutti::comm
