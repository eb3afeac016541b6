// The collectives beyond allreduce/broadcast/allgather/reduce_scatter: each one a signature (what
// every rank must agree on) and a call into collectives/.
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "core/buffer_overlap.hpp"

namespace tutti::comm {
namespace {

uint64_t sum_of(std::span<const size_t> counts) {
  uint64_t total = 0;
  for (size_t c : counts) total += c;  // overflow is refused inside the collective
  return total;
}

// The elements before `rank`'s block and the whole of `counts` (one per rank), or none when they
// are not one per rank or overflow: the collective refuses those with messages of its own.
std::optional<std::pair<size_t, size_t>> block_and_total(std::span<const size_t> counts, int rank,
                                                         int size) {
  if (counts.size() != static_cast<size_t>(size)) return std::nullopt;
  size_t before = 0, total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (r == static_cast<size_t>(rank)) before = total;
    if (__builtin_add_overflow(total, counts[r], &total)) return std::nullopt;
  }
  return std::pair{before, total};
}

constexpr std::string_view kSameBuffer = "the same buffer as send and recv (in place)";

int32_t digest_of(std::span<const size_t> counts) {
  static_assert(sizeof(size_t) == sizeof(uint64_t));
  return transport::counts_digest(reinterpret_cast<const uint64_t*>(counts.data()), counts.size());
}

}  // namespace

void Communicator::reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                          int root, const CallOptions& call) {
  // Only the root's recv is written (elsewhere it may be anything).
  if (rank_ == root)
    refuse_overlap("reduce", rank_, ByteRange::of(send, count, type),
                   ByteRange::of(recv, count, type), send == recv, kSameBuffer);
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
  // Only the root's recv is written (elsewhere it may be null).
  if (const auto blocks = block_and_total(counts, rank_, size_); blocks && rank_ == root)
    refuse_overlap("gather", rank_, ByteRange::of(send, counts[static_cast<size_t>(rank_)], type),
                   ByteRange::of(recv, blocks->second, type),
                   reinterpret_cast<uintptr_t>(send) == ByteRange::at(recv, 1, blocks->first, type),
                   "send at this rank's block of recv (in place)");
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
  // Only the root's send is read (elsewhere it may be null).
  if (const auto blocks = block_and_total(counts, rank_, size_); blocks && rank_ == root)
    refuse_overlap("scatter", rank_, ByteRange::of(send, blocks->second, type),
                   ByteRange::of(recv, counts[static_cast<size_t>(rank_)], type),
                   reinterpret_cast<uintptr_t>(recv) == ByteRange::at(send, 1, blocks->first, type),
                   "recv at this rank's block of send (in place)");
  refuse_device("scatter", {send, recv});
  run("scatter", signature(transport::CallKind::kScatter, sum_of(counts), type, -1, root), call,
      [&](collectives::Context& ctx) {
        collectives::scatterv(ctx, send, recv, counts, type, root);
      });
}

void Communicator::allgatherv(const void* send, void* recv, std::span<const size_t> counts,
                              DataType type, const CallOptions& call) {
  if (const auto blocks = block_and_total(counts, rank_, size_))
    refuse_overlap("allgatherv", rank_,
                   ByteRange::of(send, counts[static_cast<size_t>(rank_)], type),
                   ByteRange::of(recv, blocks->second, type),
                   reinterpret_cast<uintptr_t>(send) == ByteRange::at(recv, 1, blocks->first, type),
                   "send at this rank's block of recv (in place)");
  refuse_device("allgatherv", {send, recv});
  run("allgatherv",
      signature(transport::CallKind::kAllgatherv, sum_of(counts), type, -1, digest_of(counts)),
      call,
      [&](collectives::Context& ctx) { collectives::allgatherv(ctx, send, recv, counts, type); });
}

void Communicator::reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts,
                                   DataType type, ReduceOp op, const CallOptions& call) {
  if (const auto blocks = block_and_total(counts, rank_, size_))
    refuse_overlap("reduce_scatterv", rank_, ByteRange::of(send, blocks->second, type),
                   ByteRange::of(recv, counts[static_cast<size_t>(rank_)], type),
                   reinterpret_cast<uintptr_t>(recv) == ByteRange::at(send, 1, blocks->first, type),
                   "recv at this rank's block of send (in place)");
  refuse_device("reduce_scatterv", {send, recv});
  run("reduce_scatterv",
      signature(transport::CallKind::kReduceScatterv, sum_of(counts), type, static_cast<int>(op),
                digest_of(counts)),
      call, [&](collectives::Context& ctx) {
        collectives::reduce_scatterv(ctx, send, recv, counts, type, op);
      });
}

void Communicator::alltoall(const void* send, void* recv, size_t count, DataType type,
                            const CallOptions& call) {
  const std::vector<size_t> counts(static_cast<size_t>(size_), count);
  refuse_overlap("alltoall", rank_, ByteRange::of(send, count, type, counts.size()),
                 ByteRange::of(recv, count, type, counts.size()), send == recv, kSameBuffer);
  refuse_device("alltoall", {send, recv});
  run("alltoall", signature(transport::CallKind::kAlltoall, count, type, -1, -1), call,
      [&](collectives::Context& ctx) {
        collectives::alltoallv(ctx, send, counts, recv, counts, type);
      });
}

void Communicator::alltoallv(const void* send, std::span<const size_t> send_counts, void* recv,
                             std::span<const size_t> recv_counts, DataType type,
                             const CallOptions& call) {
  // In place also needs equal send and recv counts, which the collective checks.
  const auto sent = block_and_total(send_counts, rank_, size_);
  const auto received = block_and_total(recv_counts, rank_, size_);
  if (sent && received)
    refuse_overlap("alltoallv", rank_, ByteRange::of(send, sent->second, type),
                   ByteRange::of(recv, received->second, type), send == recv, kSameBuffer);
  refuse_device("alltoallv", {send, recv});
  run("alltoallv", signature(transport::CallKind::kAlltoallv, 0, type, -1, -1), call,
      [&](collectives::Context& ctx) {
        collectives::alltoallv(ctx, send, send_counts, recv, recv_counts, type);
      });
}

}  // namespace tutti::comm
