// The collective algorithms, written against transport::Channel only.
// Counts are in elements; buffers may be the same pointer (in place) where noted.
#pragma once

#include <cstddef>
#include <string_view>

#include "collectives/context.hpp"
#include "tutti/types.hpp"

namespace tutti::collectives {

enum class Algorithm { kAuto, kRing, kTree, kHalvingDoubling, kShm };

std::string_view to_string(Algorithm a);
Algorithm parse_algorithm(std::string_view name);  // "auto|ring|tree|hd|shm"; throws Error(kConfig)

// Picks the allreduce algorithm for a message of `bytes` on `size` ranks (select.cc);
// `local_window`: the transport offers a LocalWindow (all ranks on one host).
Algorithm select_allreduce(size_t bytes, int size, bool local_window = false);

// recv = reduce over ranks of send. send == recv is in place. kAvg = sum then divide by size.
void allreduce(Context& ctx, Algorithm algorithm, const void* send, void* recv, size_t count,
               DataType type, ReduceOp op);
void ring_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op);
void tree_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op);
// Through the transport's LocalWindow (all ranks on one host); Error(kConfig) when it has none.
void shm_allreduce(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                   ReduceOp op);
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

void barrier(Context& ctx);

}  // namespace tutti::collectives
