// The collective algorithms, written against transport::Channel only.
// Counts are in elements; buffers may be the same pointer (in place) where noted.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "collectives/context.hpp"
#include "collectives/segments.hpp"
#include "tutti/options.hpp"
#include "tutti/types.hpp"

namespace tutti::collectives {

// The public enum (Options::algorithm, TUTTI_ALGO): one numbering from the API to the wire
// (transport/call_signature.cc names them by it). Each algorithm is one entry of
// allreduce_registry.cc.
using Algorithm = tutti::Algorithm;

// "auto" or the algorithm's registry name.
std::string_view to_string(Algorithm a);
// "auto" or a registry name, any case; throws Error(kConfig) naming them all.
Algorithm parse_algorithm(std::string_view name);

// Picks the allreduce algorithm for `bytes` on ctx's placement; never kAuto. A communicator's
// SelectionCache holds its crossover table, computed from the cost model once (select.cc); without
// one the model is asked. With TUTTI_LOG_LEVEL=debug, rank 0 logs the decision table once per
// placement.
Algorithm select_allreduce(const Context& ctx, size_t bytes);

// recv = reduce over ranks of send. send == recv is in place. kAvg = sum then divide by size.
void allreduce(Context& ctx, Algorithm algorithm, const void* send, void* recv, size_t count,
               DataType type, ReduceOp op);
void ring_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op);
// The same over several tensors as one logical vector: segments leave from and arrive into the
// tensors as pieces, partial sums included (in their recv sides). Both ring neighbours' channels
// must take pieces (ring_takes_pieces).
void ring_allreduce_segments(Context& ctx, const SegmentView& tensors, DataType type, ReduceOp op);
bool ring_takes_pieces(Context& ctx);
void tree_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op);
// Through the transport's LocalWindow (all ranks on one host); Error(kConfig) when it has none.
void shm_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                   ReduceOp op);
// The same over several tensors as one logical vector, read and written in place.
void shm_allreduce_segments(Context& ctx, std::span<const Segment> segments, DataType type,
                            ReduceOp op);

// A fused allreduce (the engine's): the tensors reduced as one vector of their concatenation.
// The shared-memory window, the ring over channels that take pieces (tcp, shm streams, MPI) and
// the hierarchical algorithm where its hosts' channels take pieces read and write them where they
// are; every other algorithm gets them packed into `pack` (grown as needed and kept by the
// caller) and unpacked after. Says whether it packed, and how long packing and unpacking took.
struct SegmentsRun {
  bool packed = false;
  std::chrono::nanoseconds pack{0};
  std::chrono::nanoseconds unpack{0};
};
SegmentsRun allreduce_segments(Context& ctx, Algorithm algorithm, std::span<const Segment> segments,
                               DataType type, ReduceOp op, std::vector<std::byte>& pack);
// Reduce on each host, allreduce among one leader per host, broadcast on each host; needs
// ctx.host_of_rank (Error(kConfig) without it).
void hierarchical_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                            ReduceOp op);
// The same over a batch's tensors (apart, as allreduce_segments checks) where they lie: on each
// host they leave and arrive as pieces, which needs every on-host channel to take pieces
// (hierarchical_takes_pieces); the leaders' allreduce is allreduce_segments' (in place or packed
// into `pack`).
void hierarchical_allreduce_segments(Context& ctx, std::span<const Segment> tensors, DataType type,
                                     ReduceOp op, std::vector<std::byte>& pack);
bool hierarchical_takes_pieces(const Context& ctx);
void halving_doubling_allreduce(Context& ctx, const void* send, void* recv, size_t count,
                                DataType type, ReduceOp op);

// recv (size * count elements) = concatenation of every rank's send (count elements), in rank
// order. send may equal recv + rank * count (in place).
void allgather(Context& ctx, const void* send, void* recv, size_t count, DataType type);

// send holds size * recv_count elements; rank r receives the reduction of block r. kAvg divides.
// recv may equal send + rank * recv_count (in place, as in NCCL).
void reduce_scatter(Context& ctx, const void* send, void* recv, size_t recv_count, DataType type,
                    ReduceOp op);

// Every rank's buf becomes root's buf.
void broadcast(Context& ctx, void* buf, size_t count, DataType type, int root);
// The same over the recv side of `data` (call_data.hpp), without broadcast's argument checks: the
// hierarchical allreduce's last phase.
class CallData;
void broadcast_data(Context& ctx, const CallData& data, int root);

// ---- The rest of the set torch.distributed and Horovod expose. Buffers hold the blocks of every
// rank back to back, in rank order; `counts` (one per rank, zero allowed) are the same on every
// rank. Buffers that only the root reads or writes may be null elsewhere. ----

// root's recv = reduction over ranks of send (count elements). send == recv is in place at root.
void reduce(Context& ctx, const void* send, void* recv, size_t count, DataType type, ReduceOp op,
            int root);

// root's recv (sum of counts) = every rank's send (counts[rank] elements), in rank order.
void gatherv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
             DataType type, int root);
// Each rank's recv (counts[rank] elements) = block `rank` of root's send.
void scatterv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
              DataType type, int root);
// Every rank's recv (sum of counts) = every rank's send (counts[rank] elements), in rank order.
// send may equal recv + (counts before rank) (in place).
void allgatherv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
                DataType type);
// send holds sum(counts) elements; rank r receives the reduction of block r (counts[r]).
// recv may equal send + (counts before rank) (in place). kAvg divides.
void reduce_scatterv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
                     DataType type, ReduceOp op);
// Block p of send (send_counts[p]) goes to rank p, where it lands as block `rank` of recv
// (recv_counts[rank] there). Rank p's send_counts[q] must equal rank q's recv_counts[p]; a
// disagreement fails both with kMismatch. send == recv with equal counts is in place; other
// overlaps are refused.
void alltoallv(Context& ctx, const void* send, std::span<const size_t> send_counts, void* recv,
               std::span<const size_t> recv_counts, DataType type);

void barrier(Context& ctx);

}  // namespace tutti::collectives
