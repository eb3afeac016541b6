// The data each rank puts in, and the results it must get back. Inputs are small integers chosen
// per op so that every dtype holds every partial result exactly, in any reduction order:
//   sum/avg  b(i) + d(r, i), b in 2..5, the d of a rank pair cancel out: sum = n*b, avg = b exactly
//   prod     1 or 2, so every product is a power of two (exact until the type overflows, where
//            every order overflows the same way; integers wrap like the reference does)
//   min/max  0..10
// so #wrong counts real mismatches, never rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bench_options.hpp"
#include "tutti/types.hpp"
#include "typed_values.hpp"

namespace tutti::bench {

// Element access through double (integers wrap to their width), shared with the unit tests.
using values::get_value;
using values::set_value;

// Input element i (global index into the send buffer) of `rank` for a reduction with op.
double reduce_input(ReduceOp op, int rank, int nranks, size_t i);
// The same, except for bool: 0 or 1, mixed so that every logical op has both outcomes.
double reduce_input(DataType type, ReduceOp op, int rank, int nranks, size_t i);
// The reduction of reduce_input over all ranks, as the type holds it (rounded/wrapped like it).
double reduce_expected(DataType type, ReduceOp op, int nranks, size_t i);

// allgather: element i of rank's block. broadcast: element i of the root's buffer.
double gather_input(int rank, size_t i);
double broadcast_input(int root, size_t i);

// The value a receive buffer holds before a checked run, so an element nobody wrote is wrong.
inline constexpr unsigned char kPoisonByte = 0xa5;

}  // namespace tutti::bench
