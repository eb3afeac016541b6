// Typed element access for the tests, through double, and the data the collective tests reduce.
// Element access (float16/bfloat16 included) and the reference reduction steps are
// typed_values.hpp's, which tutti-bench shares and which has nothing of the reduce kernels the
// tests check.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tutti/types.hpp"
#include "typed_values.hpp"

namespace tutti::testing {

// Every dtype and every op, which the collective tests sweep.
inline constexpr DataType kAllTypes[] = {
    DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
    DataType::kInt32,   DataType::kInt64,   DataType::kUInt8};
inline constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                       ReduceOp::kMax, ReduceOp::kAvg};
// The types and ops added later, swept by their own tests (every pair tutti::supports).
inline constexpr DataType kSmallIntTypes[] = {DataType::kInt8, DataType::kInt16, DataType::kBool,
                                              DataType::kUInt8, DataType::kInt32};
inline constexpr ReduceOp kEveryOp[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                        ReduceOp::kMax, ReduceOp::kAvg,  ReduceOp::kBand,
                                        ReduceOp::kBor, ReduceOp::kBxor};

using values::get_value;
using values::set_value;

// A buffer of count elements of type, filled with value_of(i).
template <typename F>
std::vector<std::byte> make_buffer(DataType type, size_t count, F value_of) {
  std::vector<std::byte> buf(count * element_size(type));
  for (size_t i = 0; i < count; ++i) set_value(type, buf.data(), i, value_of(i));
  return buf;
}

// The contribution of `rank` at element i for op: small integers so that sums over 8 ranks stay
// exact even in bfloat16 and uint8; for prod only 1s and a few 2s.
double input_value(ReduceOp op, int rank, size_t index);
// The same, except for bool: 0 or 1, mixed so that every logical op has both outcomes.
double input_value(DataType type, ReduceOp op, int rank, size_t index);

// The exact reduction over `size` ranks of input_value (avg: the exact quotient; integer types
// truncate).
double expected_value(DataType type, ReduceOp op, int size, size_t index);

// Empty when buf matches expected_of(i) for i < count (avg on floating types within the type's
// precision); otherwise the first mismatch, described with `label`.
template <typename F>
std::string check_buffer(DataType type, ReduceOp op, const void* buf, size_t count, F expected_of,
                         const std::string& label);

bool close_enough(DataType type, ReduceOp op, double got, double expected);
std::string mismatch(const std::string& label, size_t index, double got, double expected);

template <typename F>
std::string check_buffer(DataType type, ReduceOp op, const void* buf, size_t count, F expected_of,
                         const std::string& label) {
  for (size_t i = 0; i < count; ++i) {
    const double got = get_value(type, buf, i);
    const double want = expected_of(i);
    if (!close_enough(type, op, got, want)) return mismatch(label, i, got, want);
  }
  return {};
}

}  // namespace tutti::testing
