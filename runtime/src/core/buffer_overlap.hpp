// The send and receive buffers of one call, as byte ranges, and the check that refuses them when
// they overlap in any way but the call's in-place layout. Every algorithm reads its input while it
// writes its output, so partly overlapping buffers gave a silent wrong answer (the input read
// after the output had written over it); the one overlap a call takes is its in-place layout: the
// same buffer (allreduce, reduce, alltoall), or this rank's block of the other (allgather, gather:
// send is recv's block; reduce_scatter, scatter: recv is send's block).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tutti/types.hpp"

namespace tutti {

// Bytes [begin, begin + bytes) of one buffer; empty (bytes 0) overlaps nothing.
struct ByteRange {
  uintptr_t begin = 0;
  size_t bytes = 0;

  // `blocks` x `count` elements of `type` at `p`. Empty when p is null, the type is unknown or
  // the size does not fit an address space: those are refused by the call's own checks, with
  // messages of their own.
  static ByteRange of(const void* p, size_t count, DataType type, size_t blocks = 1);
  // The address `blocks` x `count` elements of `type` after `p` (a rank's block); 0 when it does
  // not fit an address space.
  static uintptr_t at(const void* p, size_t blocks, size_t count, DataType type);
};

// Whether a and b share at least one byte.
bool overlaps(ByteRange a, ByteRange b);

// Error(kInvalidArgument) naming `call`, `rank` and both ranges when `send` and `recv` overlap and
// `in_place_layout` is false (the caller's finding that they lie as the call's in-place layout
// wants). `in_place` says in words what the call takes in place, for the advice.
void refuse_overlap(std::string_view call, int rank, ByteRange send, ByteRange recv,
                    bool in_place_layout, std::string_view in_place);

}  // namespace tutti
