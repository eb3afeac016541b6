#include "bench_data.hpp"

#include <cmath>
#include <cstring>

#include "half_bits.hpp"

namespace tutti::bench {
namespace {

template <typename T>
T get(const void* buf, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(buf) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void put(void* buf, size_t i, T v) {
  std::memcpy(static_cast<std::byte*>(buf) + i * sizeof(T), &v, sizeof(T));
}

// Integers wrap modulo their width, like the two's complement arithmetic the reduction does.
template <typename T>
T wrap(double v) {
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(v)));
}

// The value `v` becomes when stored in `type`.
double as_type(DataType type, double v) {
  std::byte scratch[8];
  store(type, scratch, 0, v);
  return load(type, scratch, 0);
}

}  // namespace

double load(DataType type, const void* buf, size_t i) {
  switch (type) {
    case DataType::kFloat32:
      return get<float>(buf, i);
    case DataType::kFloat64:
      return get<double>(buf, i);
    case DataType::kFloat16:
      return f16_to_float(get<uint16_t>(buf, i));
    case DataType::kBFloat16:
      return bf16_to_float(get<uint16_t>(buf, i));
    case DataType::kInt32:
      return get<int32_t>(buf, i);
    case DataType::kInt64:
      return static_cast<double>(get<int64_t>(buf, i));
    case DataType::kUInt8:
    case DataType::kBool:
      return get<uint8_t>(buf, i);
    case DataType::kInt8:
      return get<int8_t>(buf, i);
    case DataType::kInt16:
      return get<int16_t>(buf, i);
  }
  return 0;
}

void store(DataType type, void* buf, size_t i, double value) {
  switch (type) {
    case DataType::kFloat32:
      put(buf, i, static_cast<float>(value));
      return;
    case DataType::kFloat64:
      put(buf, i, value);
      return;
    case DataType::kFloat16:
      put(buf, i, float_to_f16(static_cast<float>(value)));
      return;
    case DataType::kBFloat16:
      put(buf, i, float_to_bf16(static_cast<float>(value)));
      return;
    case DataType::kInt32:
      put(buf, i, wrap<int32_t>(value));
      return;
    case DataType::kInt64:
      put(buf, i, wrap<int64_t>(value));
      return;
    case DataType::kUInt8:
      put(buf, i, wrap<uint8_t>(value));
      return;
    case DataType::kBool:
      put(buf, i, static_cast<uint8_t>(value != 0));
      return;
    case DataType::kInt8:
      put(buf, i, wrap<int8_t>(value));
      return;
    case DataType::kInt16:
      put(buf, i, wrap<int16_t>(value));
      return;
  }
}

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
  // 0 or 1, mostly true for the and-like ops and mostly false for the or-like ones.
  const bool and_like = op == ReduceOp::kProd || op == ReduceOp::kMin || op == ReduceOp::kBand;
  const bool rare = (static_cast<size_t>(rank) * 5 + i * 3) % 7 == 0;
  return (and_like ? !rare : rare) ? 1.0 : 0.0;
}

double reduce_expected(DataType type, ReduceOp op, int nranks, size_t i) {
  if (type == DataType::kBool) {
    bool acc = reduce_input(type, op, 0, nranks, i) != 0;
    for (int r = 1; r < nranks; ++r) {
      const bool v = reduce_input(type, op, r, nranks, i) != 0;
      if (op == ReduceOp::kSum || op == ReduceOp::kMax || op == ReduceOp::kBor)
        acc = acc || v;
      else if (op == ReduceOp::kBxor)
        acc = acc != v;
      else
        acc = acc && v;
    }
    return acc ? 1 : 0;
  }
  if (!is_floating(type)) {
    // Integer arithmetic in 64 bits, wrapped to the type's width at the end: the same result as
    // wrapping after every step, whatever the order.
    uint64_t acc = static_cast<uint64_t>(static_cast<int64_t>(reduce_input(op, 0, nranks, i)));
    for (int r = 1; r < nranks; ++r) {
      auto v = static_cast<uint64_t>(static_cast<int64_t>(reduce_input(op, r, nranks, i)));
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAvg:
          acc += v;
          break;
        case ReduceOp::kProd:
          acc *= v;
          break;
        case ReduceOp::kMin:
          acc = std::min(acc, v);
          break;  // inputs are non-negative
        case ReduceOp::kMax:
          acc = std::max(acc, v);
          break;
        case ReduceOp::kBand:
          acc &= v;
          break;
        case ReduceOp::kBor:
          acc |= v;
          break;
        case ReduceOp::kBxor:
          acc ^= v;
          break;
      }
    }
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
  double acc = reduce_input(op, 0, nranks, i);
  for (int r = 1; r < nranks; ++r) {
    double v = reduce_input(op, r, nranks, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      case ReduceOp::kBand:
      case ReduceOp::kBor:
      case ReduceOp::kBxor:
        break;  // not defined on floating types: the runtime refuses the call
    }
  }
  // Every partial result is exact in double; a product that overflows the narrow type does so at
  // some step in every order, and stays inf after it.
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
