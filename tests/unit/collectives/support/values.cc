#include "unit/collectives/support/values.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tutti::testing {

double input_value(ReduceOp op, int rank, size_t index) {
  if (op == ReduceOp::kProd) return (static_cast<size_t>(rank) + index) % 3 == 0 ? 2 : 1;
  return static_cast<double>((static_cast<size_t>(rank) * 7 + index) % 5 + 1);
}

double input_value(DataType type, ReduceOp op, int rank, size_t index) {
  if (type != DataType::kBool) return input_value(op, rank, index);
  return values::bool_input(op, rank, index);
}

double expected_value(DataType type, ReduceOp op, int size, size_t index) {
  if (type == DataType::kBool) return values::bool_expected(op, size, index);
  // In double, exact for these small integers (the bitwise ops on the integers they hold).
  double acc =
      values::fold_ranks<double>(op, size, [&](int r) { return input_value(op, r, index); });
  if (op == ReduceOp::kAvg) {
    acc /= size;
    if (!is_floating(type)) acc = std::trunc(acc);
  }
  return acc;
}

bool close_enough(DataType type, ReduceOp op, double got, double expected) {
  if (op != ReduceOp::kAvg || !is_floating(type)) return got == expected;
  double relative = 1e-12;
  if (type == DataType::kFloat32) relative = 1e-6;
  if (type == DataType::kFloat16) relative = 2e-3;
  if (type == DataType::kBFloat16) relative = 1e-2;
  return std::fabs(got - expected) <= relative * std::fabs(expected);
}

std::string mismatch(const std::string& label, size_t index, double got, double expected) {
  return fmt::format("{}: element {} is {} but should be {}", label, index, got, expected);
}

}  // namespace tutti::testing
