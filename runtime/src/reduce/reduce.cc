#include "reduce/reduce.hpp"

#include <array>
#include <cstdint>
#include <utility>

#include "core/error.hpp"
#include "reduce/kernels.hpp"
#include "reduce/ops.hpp"

namespace tutti::reduce {
namespace {

template <DataType D>
struct ElementsFor;
template <>
struct ElementsFor<DataType::kFloat32> {
  using type = NativeElements<float>;
};
template <>
struct ElementsFor<DataType::kFloat64> {
  using type = NativeElements<double>;
};
template <>
struct ElementsFor<DataType::kFloat16> {
  using type = HalfElements<Float16Codec>;
};
template <>
struct ElementsFor<DataType::kBFloat16> {
  using type = HalfElements<BFloat16Codec>;
};
template <>
struct ElementsFor<DataType::kInt32> {
  using type = NativeElements<int32_t>;
};
template <>
struct ElementsFor<DataType::kInt64> {
  using type = NativeElements<int64_t>;
};
template <>
struct ElementsFor<DataType::kUInt8> {
  using type = NativeElements<uint8_t>;
};
template <>
struct ElementsFor<DataType::kInt8> {
  using type = NativeElements<int8_t>;
};
template <>
struct ElementsFor<DataType::kInt16> {
  using type = NativeElements<int16_t>;
};
template <>
struct ElementsFor<DataType::kBool> {
  using type = NativeElements<uint8_t>;
};

// The table slot of a (type, op) pair that supports() refuses: the entry points check first, so
// reaching it is a bug.
struct RefusedKernel {
  [[noreturn]] static void fail() {
    throw Error(ErrorCode::kInternal, "reduce: a refused (type, op) pair reached its kernel");
  }
  static void accumulate(void*, const void*, size_t) { fail(); }
  static void combine(void*, const void*, const void*, size_t) { fail(); }
  static void many(void*, void*, const void* const*, size_t, size_t, bool, bool) { fail(); }
  static void divide(void*, size_t, int) { fail(); }
};

template <DataType D, ReduceOp O>
using KernelFor =
    std::conditional_t<supports(D, O),
                       Kernel<typename ElementsFor<D>::type, typename OpForType<D, O>::type>,
                       RefusedKernel>;

using AccumulateFn = void (*)(void*, const void*, size_t);
using CombineFn = void (*)(void*, const void*, const void*, size_t);
using DivideFn = void (*)(void*, size_t, int);
using ManyFn = void (*)(void*, void*, const void* const*, size_t, size_t, bool, bool);

// Function tables indexed [type][op], built from the enums' values at compile time: the (type, op)
// switch happens once per call, never per element.
template <int D, int... O>
constexpr std::array<AccumulateFn, kNumReduceOps> accumulate_row(std::integer_sequence<int, O...>) {
  return {&KernelFor<static_cast<DataType>(D), static_cast<ReduceOp>(O)>::accumulate...};
}
template <int D, int... O>
constexpr std::array<CombineFn, kNumReduceOps> combine_row(std::integer_sequence<int, O...>) {
  return {&KernelFor<static_cast<DataType>(D), static_cast<ReduceOp>(O)>::combine...};
}
template <int D, int... O>
constexpr std::array<ManyFn, kNumReduceOps> many_row(std::integer_sequence<int, O...>) {
  return {&KernelFor<static_cast<DataType>(D), static_cast<ReduceOp>(O)>::many...};
}

template <int... D>
constexpr auto make_accumulate_table(std::integer_sequence<int, D...>) {
  return std::array<std::array<AccumulateFn, kNumReduceOps>, kNumDataTypes>{
      accumulate_row<D>(std::make_integer_sequence<int, kNumReduceOps>())...};
}
template <int... D>
constexpr auto make_combine_table(std::integer_sequence<int, D...>) {
  return std::array<std::array<CombineFn, kNumReduceOps>, kNumDataTypes>{
      combine_row<D>(std::make_integer_sequence<int, kNumReduceOps>())...};
}
template <int... D>
constexpr auto make_many_table(std::integer_sequence<int, D...>) {
  return std::array<std::array<ManyFn, kNumReduceOps>, kNumDataTypes>{
      many_row<D>(std::make_integer_sequence<int, kNumReduceOps>())...};
}
template <int... D>
constexpr auto make_divide_table(std::integer_sequence<int, D...>) {
  // The op does not matter for division; kSum picks the element policy's divide.
  return std::array<DivideFn, kNumDataTypes>{
      &KernelFor<static_cast<DataType>(D), ReduceOp::kSum>::divide...};
}

constexpr auto kAccumulate =
    make_accumulate_table(std::make_integer_sequence<int, kNumDataTypes>());
constexpr auto kCombine = make_combine_table(std::make_integer_sequence<int, kNumDataTypes>());
constexpr auto kMany = make_many_table(std::make_integer_sequence<int, kNumDataTypes>());
constexpr auto kDivide = make_divide_table(std::make_integer_sequence<int, kNumDataTypes>());

void check_type(std::string_view call, DataType type) {
  if (!valid(type)) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "reduce::{}: unknown DataType value {}; pass one of tutti::DataType (0..{})",
                     call, static_cast<int>(type), kNumDataTypes - 1);
  }
}

void check_op(std::string_view call, ReduceOp op, DataType type) {
  if (!valid(op)) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "reduce::{}: unknown ReduceOp value {}; pass one of tutti::ReduceOp (0..{})",
                     call, static_cast<int>(op), kNumReduceOps - 1);
  }
  if (!supports(type, op)) {
    throw make_error(ErrorCode::kInvalidArgument, "reduce::{}: op {} is not defined on {}", call,
                     to_string(op), to_string(type));
  }
}

void check_buffer(std::string_view call, std::string_view name, const void* p, DataType type,
                  size_t count) {
  if (p == nullptr) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "reduce::{}: buffer '{}' is null but count is {} {}; pass a buffer of at "
                     "least {} bytes",
                     call, name, count, to_string(type), count * element_size(type));
  }
}

}  // namespace

void accumulate(DataType type, ReduceOp op, void* dst, const void* src, size_t count) {
  check_type("accumulate", type);
  check_op("accumulate", op, type);
  if (count == 0) return;
  check_buffer("accumulate", "dst", dst, type, count);
  check_buffer("accumulate", "src", src, type, count);
  kAccumulate[static_cast<int>(type)][static_cast<int>(op)](dst, src, count);
}

void combine(DataType type, ReduceOp op, void* dst, const void* a, const void* b, size_t count) {
  check_type("combine", type);
  check_op("combine", op, type);
  if (count == 0) return;
  check_buffer("combine", "dst", dst, type, count);
  check_buffer("combine", "a", a, type, count);
  check_buffer("combine", "b", b, type, count);
  kCombine[static_cast<int>(type)][static_cast<int>(op)](dst, a, b, count);
}

void reduce_many(DataType type, ReduceOp op, void* out, void* copy,
                 std::span<const void* const> srcs, size_t count, CopyStores stores,
                 CopyStores out_stores) {
  check_type("reduce_many", type);
  check_op("reduce_many", op, type);
  if (srcs.empty())
    throw make_error(ErrorCode::kInvalidArgument,
                     "reduce::reduce_many: no sources for {} elements of {}; pass at least one",
                     count, to_string(type));
  if (count == 0) return;
  check_buffer("reduce_many", "out", out, type, count);
  for (const void* src : srcs) check_buffer("reduce_many", "srcs[]", src, type, count);
  kMany[static_cast<int>(type)][static_cast<int>(op)](out, copy, srcs.data(), srcs.size(), count,
                                                      stores == CopyStores::kStreaming,
                                                      out_stores == CopyStores::kStreaming);
}

void divide(DataType type, void* buf, size_t count, int divisor) {
  check_type("divide", type);
  if (type == DataType::kBool)
    throw Error(ErrorCode::kInvalidArgument, "reduce::divide: bool has no average");
  if (divisor <= 0) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "reduce::divide: divisor {} for {} elements of {} must be positive (it is the "
                     "number of ranks averaged)",
                     divisor, count, to_string(type));
  }
  if (count == 0) return;
  check_buffer("divide", "buf", buf, type, count);
  kDivide[static_cast<int>(type)](buf, count, divisor);
}

}  // namespace tutti::reduce
