#include "bench_data.hpp"

#include <cmath>

namespace tutti::bench {

using values::as_type;
using values::fold_ranks;

double reduce_input(ReduceOp op, int rank, int nranks, size_t i) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: {
      double base = 2.0 + static_cast<double>(i % 4);
      // Ranks pair up (0,1), (2,3), ...: +1 and -1 (flipped on odd i) cancel; an unpaired last
      // rank adds 0. The sum is nranks * base, so the average is exact in every type.
      double d = 0;
      if (rank % 2 == 1)
        d = -1;
      else if (rank + 1 < nranks)
        d = 1;
      return base + ((i % 2) ? -d : d);
    }
    case ReduceOp::kProd:
      return (static_cast<size_t>(rank) + i) % 3 == 0 ? 2.0 : 1.0;
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return static_cast<double>((static_cast<size_t>(rank) * 7 + i * 3) % 11);
  }
  return 0;
}

double reduce_input(DataType type, ReduceOp op, int rank, int nranks, size_t i) {
  if (type != DataType::kBool) return reduce_input(op, rank, nranks, i);
  return values::bool_input(op, rank, i);
}

double reduce_expected(DataType type, ReduceOp op, int nranks, size_t i) {
  if (type == DataType::kBool) return values::bool_expected(op, nranks, i);
  if (!is_floating(type)) {
    // Integer arithmetic in 64 bits, wrapped to the type's width at the end: the same result as
    // wrapping after every step, whatever the order. (Unsigned min and max are right: the inputs
    // are non-negative.)
    const uint64_t acc = fold_ranks<uint64_t>(op, nranks, [&](int r) {
      return static_cast<uint64_t>(static_cast<int64_t>(reduce_input(op, r, nranks, i)));
    });
    double wrapped = as_type(type, static_cast<double>(static_cast<int64_t>(acc)));
    if (type == DataType::kInt64) wrapped = static_cast<double>(static_cast<int64_t>(acc));
    if (op == ReduceOp::kAvg) {
      // Truncating integer division of the (wrapped) sum, as the runtime's divide() does.
      if (type == DataType::kUInt8) return static_cast<double>(static_cast<uint8_t>(acc) / nranks);
      if (type == DataType::kInt32) return static_cast<double>(static_cast<int32_t>(acc) / nranks);
      if (type == DataType::kInt8) return static_cast<double>(static_cast<int8_t>(acc) / nranks);
      if (type == DataType::kInt16) return static_cast<double>(static_cast<int16_t>(acc) / nranks);
      return static_cast<double>(static_cast<int64_t>(acc) / nranks);
    }
    return wrapped;
  }
  // Every partial result is exact in double; a product that overflows the narrow type does so at
  // some step in every order, and stays inf after it. (The bitwise ops are not defined on
  // floating types: the runtime refuses them, and the sweep never checks them.)
  const double acc =
      fold_ranks<double>(op, nranks, [&](int r) { return reduce_input(op, r, nranks, i); });
  double in_type = as_type(type, acc);
  if (op == ReduceOp::kAvg) return as_type(type, in_type / nranks);
  return in_type;
}

double gather_input(int rank, size_t i) {
  return static_cast<double>((static_cast<size_t>(rank) * 13 + i) % 97 + 1);
}

double broadcast_input(int root, size_t i) {
  return static_cast<double>((i * 7 + static_cast<size_t>(root)) % 97 + 1);
}

}  // namespace tutti::bench
