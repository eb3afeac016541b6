// The cases every algorithm that reduces a fused batch in the tensors themselves must pass (the
// ring and the hierarchical algorithm over channels that take pieces): layouts with empty
// tensors, single elements, odd counts, and pipeline segments both far smaller than a tensor and
// spanning many tensors (and not a whole number of elements); every op, in place and out of place;
// and the scaled sum.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "collectives/collectives.hpp"

namespace tutti::testing {

// Runs every layout x op x in place / out of place with `algorithm` on this rank of `size`, each
// call's context from next_context(segment_bytes). `should_pack(elements)` says whether this rank
// must have packed a batch of that many elements. Throws std::runtime_error describing the first
// wrong element, modified input or wrong packing; every rank must call it.
void check_segment_cases(const std::function<collectives::Context(size_t)>& next_context, int rank,
                         int size, DataType type, collectives::Algorithm algorithm,
                         const std::function<bool(size_t)>& should_pack, const std::string& who);

// Makes every channel of this rank (ThreadChannels) take no pieces, as an MPI or striped link: the
// rank must pack where it would have reduced in the tensors.
void refuse_pieces(transport::Transport& transport, int rank, int size);

// prescale 0.5 and postscale 4 over three tensors (37 elements of rank + 1, an empty one, 1000
// ones), float32 sum, in place: every element must be sum * 2 and nothing packed. Returns the
// first error, or "".
std::string check_scaled_segments(collectives::Context ctx, collectives::Algorithm algorithm,
                                  int rank, int size);

}  // namespace tutti::testing
