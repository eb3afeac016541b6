// The scalar meaning of each ReduceOp, written so that g++ -O3 turns loops over it into SIMD code
// (no calls, no branches the if-converter cannot remove).
#pragma once

#include <type_traits>

#include "tutti/types.hpp"

namespace tutti::reduce {

// Integer sum/prod wrap modulo 2^bits, like two's-complement hardware and NCCL. Signed overflow is
// undefined in C++, so the arithmetic runs on unsigned values at least as wide as unsigned int
// (narrower types would be promoted to signed int and could overflow there).
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct SumOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct ProdOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

// min/max propagate NaN: if either input is NaN the result is NaN, as torch.minimum/maximum and
// NCCL do. Plain a < b ? a : b would silently drop a NaN in a (the comparison is false), so a
// reduction's result would depend on rank order. `a != a` is the NaN test that vectorizes.
// Between +0 and -0 (equal values) the result is b.
struct MinOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return ((a < b) | (a != a)) ? a : b;
    } else {
      return a < b ? a : b;
    }
  }
};

struct MaxOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return ((a > b) | (a != a)) ? a : b;
    } else {
      return a > b ? a : b;
    }
  }
};

// Bitwise ops, defined on integer types only (reduce.cc never instantiates them for floats).
struct BandOp {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};
struct BorOp {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};
struct BxorOp {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a ^ b);
  }
};

// bool (stored as one byte): any non-zero byte counts as true, every result is 0 or 1.
struct LogicalOrOp {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>((a | b) != 0);
  }
};
struct LogicalAndOp {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>((a != 0) & (b != 0));
  }
};
struct LogicalXorOp {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>((a != 0) ^ (b != 0));
  }
};

// kAvg reduces as a sum; collectives call divide() once on the final result.
template <ReduceOp Op>
struct OpFor;
template <>
struct OpFor<ReduceOp::kSum> {
  using type = SumOp;
};
template <>
struct OpFor<ReduceOp::kAvg> {
  using type = SumOp;
};
template <>
struct OpFor<ReduceOp::kProd> {
  using type = ProdOp;
};
template <>
struct OpFor<ReduceOp::kMin> {
  using type = MinOp;
};
template <>
struct OpFor<ReduceOp::kMax> {
  using type = MaxOp;
};
template <>
struct OpFor<ReduceOp::kBand> {
  using type = BandOp;
};
template <>
struct OpFor<ReduceOp::kBor> {
  using type = BorOp;
};
template <>
struct OpFor<ReduceOp::kBxor> {
  using type = BxorOp;
};

// The op as it applies to `D`: bool maps every op onto logic (sum and max are or, prod and min
// and, bxor xor), as torch does for bool tensors.
template <DataType D, ReduceOp O>
struct OpForType {
  using type = typename OpFor<O>::type;
};
template <ReduceOp O>
struct OpForType<DataType::kBool, O> {
  using type =
      std::conditional_t<O == ReduceOp::kSum || O == ReduceOp::kMax || O == ReduceOp::kBor,
                         LogicalOrOp,
                         std::conditional_t<O == ReduceOp::kBxor, LogicalXorOp, LogicalAndOp>>;
};

}  // namespace tutti::reduce
