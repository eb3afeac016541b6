// The identity element of a reduction (x op identity == x), which a joined rank contributes to an
// allreduce it has no tensor for: 0 for sum, avg, bor and bxor; 1 for prod; the largest value for
// min; the lowest for max; all ones for band.
#pragma once

#include <cstddef>

#include "tutti/types.hpp"

namespace tutti::engine {

void fill_identity(void* buf, size_t count, DataType type, ReduceOp op);

}  // namespace tutti::engine
