// A fused allreduce whose tensors share memory (the same buffer enqueued under two names, one
// tensor's output given as another's input), for the algorithms that read and write the tensors
// where they are: every tensor must get the reduction of its own input, as with packing.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "collectives/collectives.hpp"

namespace tutti::testing {

// Runs both cases with `algorithm` (float32 sum, `count` elements a tensor) on this rank of
// `size`, taking each call's context from next_context; throws std::runtime_error describing the
// first wrong element. Every rank must call it.
void check_aliased_segments(const std::function<collectives::Context()>& next_context, int rank,
                            int size, collectives::Algorithm algorithm, size_t count);

}  // namespace tutti::testing
