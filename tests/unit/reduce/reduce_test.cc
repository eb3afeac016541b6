#include "reduce/reduce.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "reduce/half.hpp"
#include "tutti/error.hpp"

namespace tutti::reduce {
namespace {

constexpr DataType kAllTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                  DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                                  DataType::kUInt8};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kAvg};
constexpr size_t kCounts[] = {0, 1, 7, 255, 256, 257, 1000, 4099};
constexpr std::byte kGuard{0xa5};
constexpr size_t kGuardBytes = 64;

// ---- Scalar reference, one element at a time, written independently of the kernels. ----

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

template <typename F>
F reference_float(ReduceOp op, F a, F b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMin:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
      return std::fmin(a, b);
    case ReduceOp::kMax:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
      return std::fmax(a, b);
    default:  // bitwise ops are refused on floats (see RefusesUndefinedPairs)
      break;
  }
  return a;
}

// Integers wrap modulo 2^bits: compute in 64-bit unsigned and keep the low bits.
template <typename I>
I reference_int(ReduceOp op, I a, I b) {
  const auto ua = static_cast<uint64_t>(static_cast<int64_t>(a));
  const auto ub = static_cast<uint64_t>(static_cast<int64_t>(b));
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<I>(ua + ub);
    case ReduceOp::kProd:
      return static_cast<I>(ua * ub);
    case ReduceOp::kMin:
      return a < b ? a : b;
    case ReduceOp::kMax:
      return a > b ? a : b;
    case ReduceOp::kBand:
      return static_cast<I>(ua & ub);
    case ReduceOp::kBor:
      return static_cast<I>(ua | ub);
    case ReduceOp::kBxor:
      return static_cast<I>(ua ^ ub);
  }
  return a;
}

// bool: any non-zero byte is true; sum/max/bor are or, prod/min/band and, bxor xor.
uint8_t reference_bool(ReduceOp op, uint8_t a, uint8_t b) {
  const bool x = a != 0, y = b != 0;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMax:
    case ReduceOp::kBor:
      return x || y;
    case ReduceOp::kBxor:
      return x != y;
    default:
      return x && y;
  }
}

void reference_element(DataType type, ReduceOp op, std::byte* out, const std::byte* a,
                       const std::byte* b) {
  switch (type) {
    case DataType::kFloat32:
      return store(out, reference_float(op, load<float>(a), load<float>(b)));
    case DataType::kFloat64:
      return store(out, reference_float(op, load<double>(a), load<double>(b)));
    case DataType::kFloat16:
      return store(out, float_to_f16(reference_float(op, f16_to_float(load<uint16_t>(a)),
                                                     f16_to_float(load<uint16_t>(b)))));
    case DataType::kBFloat16:
      return store(out, float_to_bf16(reference_float(op, bf16_to_float(load<uint16_t>(a)),
                                                      bf16_to_float(load<uint16_t>(b)))));
    case DataType::kInt32:
      return store(out, reference_int(op, load<int32_t>(a), load<int32_t>(b)));
    case DataType::kInt64:
      return store(out, reference_int(op, load<int64_t>(a), load<int64_t>(b)));
    case DataType::kUInt8:
      return store(out, reference_int(op, load<uint8_t>(a), load<uint8_t>(b)));
    case DataType::kInt8:
      return store(out, reference_int(op, load<int8_t>(a), load<int8_t>(b)));
    case DataType::kInt16:
      return store(out, reference_int(op, load<int16_t>(a), load<int16_t>(b)));
    case DataType::kBool:
      return store(out, reference_bool(op, load<uint8_t>(a), load<uint8_t>(b)));
  }
}

void reference_divide(DataType type, std::byte* p, int d) {
  switch (type) {
    case DataType::kFloat32:
      return store(p, load<float>(p) / static_cast<float>(d));
    case DataType::kFloat64:
      return store(p, load<double>(p) / d);
    case DataType::kFloat16:
      return store(p, float_to_f16(f16_to_float(load<uint16_t>(p)) / static_cast<float>(d)));
    case DataType::kBFloat16:
      return store(p, float_to_bf16(bf16_to_float(load<uint16_t>(p)) / static_cast<float>(d)));
    case DataType::kInt32:
      return store(p, static_cast<int32_t>(load<int32_t>(p) / d));
    case DataType::kInt64:
      return store(p, static_cast<int64_t>(load<int64_t>(p) / d));
    case DataType::kUInt8:
      return store(p, static_cast<uint8_t>(load<uint8_t>(p) / d));
    case DataType::kInt8:
      return store(p, static_cast<int8_t>(load<int8_t>(p) / d));
    case DataType::kInt16:
      return store(p, static_cast<int16_t>(load<int16_t>(p) / d));
    case DataType::kBool:
      return;  // bool has no average
  }
}

// Floats compare bit for bit, except that any NaN matches any NaN and, for min/max, +0 matches -0
// (their order among equal values is not part of the contract).
::testing::AssertionResult same_element(DataType type, ReduceOp op, const std::byte* expected,
                                        const std::byte* actual, size_t index) {
  const size_t size = element_size(type);
  if (std::memcmp(expected, actual, size) == 0) return ::testing::AssertionSuccess();
  if (is_floating(type)) {
    double e = 0;
    double a = 0;
    switch (type) {
      case DataType::kFloat32:
        e = load<float>(expected), a = load<float>(actual);
        break;
      case DataType::kFloat64:
        e = load<double>(expected), a = load<double>(actual);
        break;
      case DataType::kFloat16:
        e = f16_to_float(load<uint16_t>(expected)), a = f16_to_float(load<uint16_t>(actual));
        break;
      default:
        e = bf16_to_float(load<uint16_t>(expected)), a = bf16_to_float(load<uint16_t>(actual));
        break;
    }
    if (std::isnan(e) && std::isnan(a)) return ::testing::AssertionSuccess();
    if ((op == ReduceOp::kMin || op == ReduceOp::kMax) && e == 0 && a == 0) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "element " << index << ": expected " << e << ", got " << a;
  }
  int64_t e = 0;
  int64_t a = 0;
  std::memcpy(&e, expected, size);
  std::memcpy(&a, actual, size);
  return ::testing::AssertionFailure()
         << "element " << index << ": expected raw " << e << ", got raw " << a;
}

// ---- Test data ----

// Mostly ordinary values, sprinkled with the ones that break kernels: NaN, +-inf, +-0,
// subnormals, huge values (sum/prod overflow), and for integers the full bit range (wrap-around).
void fill_random(DataType type, std::byte* p, size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> normal(-4.0, 4.0);
  std::uniform_int_distribution<int> pick(0, 99);
  for (size_t i = 0; i < count; ++i) {
    std::byte* e = p + i * element_size(type);
    if (!is_floating(type)) {
      const uint64_t bits = rng();
      std::memcpy(e, &bits, element_size(type));
      continue;
    }
    double v = normal(rng);
    const int k = pick(rng);
    if (k == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (k == 1) v = std::numeric_limits<double>::infinity();
    if (k == 2) v = -std::numeric_limits<double>::infinity();
    if (k == 3) v = 0.0;
    if (k == 4) v = -0.0;
    if (k == 5) v = 1e-42;  // float subnormal; f16/bf16 round it to zero
    if (k == 6) v = 3e-6;   // f16 subnormal
    if (k == 7) v = 6e4;    // near the f16 maximum
    if (k == 8) v = -3e38;  // near the float maximum; sums overflow
    switch (type) {
      case DataType::kFloat32:
        store(e, static_cast<float>(v));
        break;
      case DataType::kFloat64:
        store(e, v);
        break;
      case DataType::kFloat16:
        store(e, float_to_f16(static_cast<float>(v)));
        break;
      default:
        store(e, float_to_bf16(static_cast<float>(v)));
        break;
    }
  }
}

// A byte region at a chosen offset inside a guarded allocation, so writes outside it are caught.
class Region {
 public:
  Region(DataType type, size_t count, size_t offset)
      : bytes_(count * element_size(type)),
        offset_(offset),
        storage_(offset + bytes_ + kGuardBytes, kGuard) {}
  std::byte* data() { return storage_.data() + offset_; }
  size_t bytes() const { return bytes_; }
  ::testing::AssertionResult guards_intact() const {
    for (size_t i = 0; i < storage_.size(); ++i) {
      if (i >= offset_ && i < offset_ + bytes_) continue;
      if (storage_[i] != kGuard) {
        return ::testing::AssertionFailure() << "byte " << i << " outside the buffer (offset "
                                             << offset_ << ", " << bytes_ << " bytes) changed";
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  size_t bytes_;
  size_t offset_;
  std::vector<std::byte> storage_;  // operator new: 16-byte aligned
};

// Where buffers start relative to a 16-byte boundary. Shifted-by-elements keeps element alignment
// but breaks vector alignment; byte offsets break element alignment (the kernels must not read
// such memory as the element type).
enum class Placement { kAligned, kElementShifted, kByteMisaligned, kMixed };
constexpr Placement kAllPlacements[] = {Placement::kAligned, Placement::kElementShifted,
                                        Placement::kByteMisaligned, Placement::kMixed};

size_t offset_for(Placement p, DataType type, int operand) {
  switch (p) {
    case Placement::kAligned:
      return 0;
    case Placement::kElementShifted:
      return element_size(type) * (1 + 2 * operand);
    case Placement::kByteMisaligned:
      return 1 + 2 * operand;
    case Placement::kMixed:
      return operand == 0 ? 0 : 1 + 2 * operand;
  }
  return 0;
}

std::string placement_name(Placement p) {
  switch (p) {
    case Placement::kAligned:
      return "aligned";
    case Placement::kElementShifted:
      return "element_shifted";
    case Placement::kByteMisaligned:
      return "byte_misaligned";
    case Placement::kMixed:
      return "mixed";
  }
  return "?";
}

uint64_t seed_for(DataType type, ReduceOp op, size_t count, Placement p) {
  return (static_cast<uint64_t>(type) << 48) ^ (static_cast<uint64_t>(op) << 40) ^ (count << 8) ^
         static_cast<uint64_t>(p);
}

// ---- accumulate: every dtype x op x count x placement against the reference ----

using AccumulateParam = std::tuple<DataType, ReduceOp, size_t, Placement>;

class AccumulateTest : public ::testing::TestWithParam<AccumulateParam> {};

TEST_P(AccumulateTest, MatchesScalarReference) {
  const auto [type, op, count, placement] = GetParam();
  const size_t size = element_size(type);
  std::mt19937_64 rng(seed_for(type, op, count, placement));
  Region dst(type, count, offset_for(placement, type, 0));
  Region src(type, count, offset_for(placement, type, 1));
  fill_random(type, dst.data(), count, rng);
  fill_random(type, src.data(), count, rng);
  const std::vector<std::byte> src_before(src.data(), src.data() + src.bytes());

  std::vector<std::byte> expected(count * size);
  for (size_t i = 0; i < count; ++i) {
    reference_element(type, op, expected.data() + i * size, dst.data() + i * size,
                      src.data() + i * size);
  }
  accumulate(type, op, dst.data(), src.data(), count);

  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(same_element(type, op, expected.data() + i * size, dst.data() + i * size, i));
  }
  EXPECT_EQ(src_before, std::vector<std::byte>(src.data(), src.data() + src.bytes()))
      << "src was modified";
  EXPECT_TRUE(dst.guards_intact());
  EXPECT_TRUE(src.guards_intact());
}

std::string accumulate_name(const ::testing::TestParamInfo<AccumulateParam>& info) {
  const auto [type, op, count, placement] = info.param;
  return std::string(to_string(type)) + "_" + std::string(to_string(op)) + "_" +
         std::to_string(count) + "_" + placement_name(placement);
}

INSTANTIATE_TEST_SUITE_P(AllTypesOpsCounts, AccumulateTest,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes),
                                            ::testing::ValuesIn(kAllOps),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::ValuesIn(kAllPlacements)),
                         accumulate_name);

// The later types and ops, every pair tutti::supports: small integers with every op, the older
// integer types with the bitwise ones, bool with its logical readings.
constexpr ReduceOp kBitwiseOps[] = {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
constexpr ReduceOp kEveryOp[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                 ReduceOp::kAvg, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};
constexpr ReduceOp kBoolOps[] = {ReduceOp::kSum,  ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                 ReduceOp::kBand, ReduceOp::kBor,  ReduceOp::kBxor};
INSTANTIATE_TEST_SUITE_P(SmallIntegers, AccumulateTest,
                         ::testing::Combine(::testing::Values(DataType::kInt8, DataType::kInt16),
                                            ::testing::ValuesIn(kEveryOp),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::ValuesIn(kAllPlacements)),
                         accumulate_name);
INSTANTIATE_TEST_SUITE_P(
    Bitwise, AccumulateTest,
    ::testing::Combine(::testing::Values(DataType::kUInt8, DataType::kInt32, DataType::kInt64),
                       ::testing::ValuesIn(kBitwiseOps), ::testing::ValuesIn(kCounts),
                       ::testing::ValuesIn(kAllPlacements)),
    accumulate_name);
INSTANTIATE_TEST_SUITE_P(Bool, AccumulateTest,
                         ::testing::Combine(::testing::Values(DataType::kBool),
                                            ::testing::ValuesIn(kBoolOps),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::ValuesIn(kAllPlacements)),
                         accumulate_name);

TEST(ReduceRefusals, RefusesUndefinedPairs) {
  float f[4] = {1, 2, 3, 4};
  uint8_t b[4] = {1, 0, 1, 1};
  for (ReduceOp op : kBitwiseOps) {
    for (DataType t :
         {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
      try {
        accumulate(t, op, f, f, 1);
        ADD_FAILURE() << to_string(op) << " on " << to_string(t) << " was not refused";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
        EXPECT_NE(std::string(e.what()).find("not defined on"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_THROW(accumulate(DataType::kBool, ReduceOp::kAvg, b, b, 4), Error);
  EXPECT_THROW(divide(DataType::kBool, b, 4, 2), Error);
  // Every result of a logical op is 0 or 1, whatever non-zero bytes came in.
  uint8_t x[4] = {7, 0, 200, 1};
  uint8_t y[4] = {3, 0, 0, 9};
  accumulate(DataType::kBool, ReduceOp::kBxor, x, y, 4);
  EXPECT_EQ(x[0], 0);
  EXPECT_EQ(x[1], 0);
  EXPECT_EQ(x[2], 1);
  EXPECT_EQ(x[3], 0);
}

// ---- combine: separate output and every way dst may alias an input ----

enum class Aliasing { kNone, kDstIsA, kDstIsB, kAllSame };
constexpr Aliasing kAllAliasings[] = {Aliasing::kNone, Aliasing::kDstIsA, Aliasing::kDstIsB,
                                      Aliasing::kAllSame};

std::string aliasing_name(Aliasing a) {
  switch (a) {
    case Aliasing::kNone:
      return "separate";
    case Aliasing::kDstIsA:
      return "dst_is_a";
    case Aliasing::kDstIsB:
      return "dst_is_b";
    case Aliasing::kAllSame:
      return "all_same";
  }
  return "?";
}

using CombineParam = std::tuple<DataType, ReduceOp, Aliasing, Placement>;

class CombineTest : public ::testing::TestWithParam<CombineParam> {};

TEST_P(CombineTest, MatchesScalarReference) {
  const auto [type, op, aliasing, placement] = GetParam();
  const size_t size = element_size(type);
  for (size_t count : {size_t{1}, size_t{257}, size_t{4099}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    std::mt19937_64 rng(seed_for(type, op, count, placement) ^ static_cast<uint64_t>(aliasing));
    Region a(type, count, offset_for(placement, type, 0));
    Region b(type, count, offset_for(placement, type, 1));
    Region out(type, count, offset_for(placement, type, 2));
    fill_random(type, a.data(), count, rng);
    fill_random(type, b.data(), count, rng);
    fill_random(type, out.data(), count, rng);

    const std::byte* in_a = a.data();
    const std::byte* in_b = aliasing == Aliasing::kAllSame ? a.data() : b.data();
    std::byte* dst = out.data();
    if (aliasing == Aliasing::kDstIsA || aliasing == Aliasing::kAllSame) dst = a.data();
    if (aliasing == Aliasing::kDstIsB) dst = b.data();

    std::vector<std::byte> expected(count * size);
    for (size_t i = 0; i < count; ++i) {
      reference_element(type, op, expected.data() + i * size, in_a + i * size, in_b + i * size);
    }
    combine(type, op, dst, in_a, in_b, count);

    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(same_element(type, op, expected.data() + i * size, dst + i * size, i));
    }
    EXPECT_TRUE(a.guards_intact());
    EXPECT_TRUE(b.guards_intact());
    EXPECT_TRUE(out.guards_intact());
  }
}

std::string combine_name(const ::testing::TestParamInfo<CombineParam>& info) {
  const auto [type, op, aliasing, placement] = info.param;
  return std::string(to_string(type)) + "_" + std::string(to_string(op)) + "_" +
         aliasing_name(aliasing) + "_" + placement_name(placement);
}

INSTANTIATE_TEST_SUITE_P(AllTypesOpsAliasings, CombineTest,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes),
                                            ::testing::ValuesIn(kAllOps),
                                            ::testing::ValuesIn(kAllAliasings),
                                            ::testing::ValuesIn(kAllPlacements)),
                         combine_name);

// accumulate(dst, dst): the fully aliased case of accumulate itself.
class AccumulateSelfTest : public ::testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(AccumulateSelfTest, ReducesBufferWithItself) {
  const auto [type, op] = GetParam();
  const size_t size = element_size(type);
  const size_t count = 1000;
  std::mt19937_64 rng(seed_for(type, op, count, Placement::kAligned) + 1);
  Region buf(type, count, 0);
  fill_random(type, buf.data(), count, rng);
  std::vector<std::byte> expected(count * size);
  for (size_t i = 0; i < count; ++i) {
    reference_element(type, op, expected.data() + i * size, buf.data() + i * size,
                      buf.data() + i * size);
  }
  accumulate(type, op, buf.data(), buf.data(), count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(same_element(type, op, expected.data() + i * size, buf.data() + i * size, i));
  }
}

std::string type_op_name(const ::testing::TestParamInfo<std::tuple<DataType, ReduceOp>>& info) {
  return std::string(to_string(std::get<0>(info.param))) + "_" +
         std::string(to_string(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllTypesOps, AccumulateSelfTest,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes),
                                            ::testing::ValuesIn(kAllOps)),
                         type_op_name);

// ---- reduce_many: N sources in one pass, an optional second copy, cached or streaming (both out
// and the copy) ----

// Which buffer reduce_many's out is: its own, or exactly one of the sources (in place).
enum class ManyOut { kSeparate, kFirstSource, kLastSource };
constexpr ManyOut kAllManyOuts[] = {ManyOut::kSeparate, ManyOut::kFirstSource,
                                    ManyOut::kLastSource};
constexpr CopyStores kAllStores[] = {CopyStores::kCached, CopyStores::kStreaming};

using ManyParam = std::tuple<DataType, ReduceOp, size_t, ManyOut, CopyStores, Placement>;

class ReduceManyTest : public ::testing::TestWithParam<ManyParam> {};

TEST_P(ReduceManyTest, FoldsSourcesLeftToRightIntoOutAndCopy) {
  const auto [type, op, nsrc, out_kind, stores, placement] = GetParam();
  const size_t size = element_size(type);
  // Around the kernel's 4 KiB block for every element size, and a tail that is not whole vectors.
  for (size_t count : {size_t{1}, size_t{1023}, 4096 / size + 3, 3 * 4096 / size + 17}) {
    SCOPED_TRACE("count " + std::to_string(count));
    std::mt19937_64 rng(seed_for(type, op, count, placement) ^ (nsrc << 4) ^
                        static_cast<uint64_t>(out_kind));
    std::vector<Region> srcs;
    srcs.reserve(nsrc);
    for (size_t k = 0; k < nsrc; ++k) {
      srcs.emplace_back(type, count, offset_for(placement, type, static_cast<int>(k % 3)));
      fill_random(type, srcs.back().data(), count, rng);
    }
    Region out(type, count, offset_for(placement, type, 1));
    Region copy(type, count, offset_for(placement, type, 2));
    fill_random(type, out.data(), count, rng);

    // Left-to-right fold with the pairwise reference, rounding every step.
    std::vector<std::byte> expected(srcs[0].data(), srcs[0].data() + count * size);
    for (size_t k = 1; k < nsrc; ++k)
      for (size_t i = 0; i < count; ++i)
        reference_element(type, op, expected.data() + i * size, expected.data() + i * size,
                          srcs[k].data() + i * size);

    std::vector<const void*> pointers;
    for (auto& r : srcs) pointers.push_back(r.data());
    std::byte* dst = out.data();
    if (out_kind == ManyOut::kFirstSource) dst = srcs.front().data();
    if (out_kind == ManyOut::kLastSource) dst = srcs.back().data();
    reduce_many(type, op, dst, copy.data(), pointers, count, stores, stores);

    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(same_element(type, op, expected.data() + i * size, dst + i * size, i));
      ASSERT_EQ(0, std::memcmp(dst + i * size, copy.data() + i * size, size))
          << "copy differs from out at element " << i;
    }
    for (auto& r : srcs) EXPECT_TRUE(r.guards_intact());
    EXPECT_TRUE(out.guards_intact());
    EXPECT_TRUE(copy.guards_intact());
  }
}

std::string many_name(const ::testing::TestParamInfo<ManyParam>& info) {
  const auto [type, op, nsrc, out_kind, stores, placement] = info.param;
  const char* outs[] = {"separate", "out_is_first", "out_is_last"};
  return std::string(to_string(type)) + "_" + std::string(to_string(op)) + "_" +
         std::to_string(nsrc) + "src_" + outs[static_cast<int>(out_kind)] + "_" +
         (stores == CopyStores::kStreaming ? "streaming" : "cached") + "_" +
         placement_name(placement);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesOpsSources, ReduceManyTest,
    ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::ValuesIn(kAllOps),
                       ::testing::Values(size_t{1}, size_t{2}, size_t{3}, size_t{5}),
                       ::testing::ValuesIn(kAllManyOuts), ::testing::ValuesIn(kAllStores),
                       ::testing::Values(Placement::kAligned, Placement::kByteMisaligned)),
    many_name);

TEST(ReduceMany, WithoutCopyWritesOnlyOut) {
  const size_t count = 5000;
  std::vector<float> a(count, 1.5f), b(count, 2.0f), c(count, -0.5f), out(count, 0.0f);
  const void* srcs[] = {a.data(), b.data(), c.data()};
  reduce_many(DataType::kFloat32, ReduceOp::kSum, out.data(), nullptr, srcs, count);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(3.0f, out[i]) << i;
}

// Whether reduce_many refuses these sources as an invalid argument.
bool many_rejects(const void* const* srcs, size_t nsrc) {
  float out = 0;
  try {
    reduce_many(DataType::kFloat32, ReduceOp::kSum, &out, nullptr, {srcs, nsrc}, 1);
  } catch (const Error& e) {
    return e.code() == ErrorCode::kInvalidArgument;
  }
  return false;
}

TEST(ReduceMany, RejectsEmptySourcesAndNullBuffers) {
  EXPECT_TRUE(many_rejects(nullptr, 0));
  const void* srcs[] = {nullptr};
  EXPECT_TRUE(many_rejects(srcs, 1));
}

// ---- stream_copy: same bytes as memcpy for every length and destination offset ----

class StreamCopyTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(StreamCopyTest, CopiesExactlyTheBytes) {
  const auto [bytes, offset] = GetParam();
  std::mt19937_64 rng(bytes * 131 + offset);
  std::vector<std::byte> src(bytes + 7);
  for (auto& b : src) b = static_cast<std::byte>(rng());
  Region dst(DataType::kUInt8, bytes, offset);
  stream_copy(dst.data(), src.data() + offset % 7, bytes);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data() + offset % 7, bytes));
  EXPECT_TRUE(dst.guards_intact());
}

INSTANTIATE_TEST_SUITE_P(
    LengthsOffsets, StreamCopyTest,
    ::testing::Combine(::testing::Values(size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{63},
                                         size_t{64}, size_t{65}, size_t{4099}, size_t{65536} + 33),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{8}, size_t{15})));

// ---- divide ----

using DivideParam = std::tuple<DataType, int, Placement>;

class DivideTest : public ::testing::TestWithParam<DivideParam> {};

TEST_P(DivideTest, MatchesScalarReference) {
  const auto [type, divisor, placement] = GetParam();
  const size_t size = element_size(type);
  for (size_t count : kCounts) {
    SCOPED_TRACE("count " + std::to_string(count));
    std::mt19937_64 rng(seed_for(type, ReduceOp::kAvg, count, placement) + divisor);
    Region buf(type, count, offset_for(placement, type, 1));
    fill_random(type, buf.data(), count, rng);
    std::vector<std::byte> expected(buf.data(), buf.data() + buf.bytes());
    for (size_t i = 0; i < count; ++i) reference_divide(type, expected.data() + i * size, divisor);
    divide(type, buf.data(), count, divisor);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(
          same_element(type, ReduceOp::kAvg, expected.data() + i * size, buf.data() + i * size, i));
    }
    EXPECT_TRUE(buf.guards_intact());
  }
}

std::string divide_name(const ::testing::TestParamInfo<DivideParam>& info) {
  const auto [type, divisor, placement] = info.param;
  return std::string(to_string(type)) + "_by_" + std::to_string(divisor) + "_" +
         placement_name(placement);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, DivideTest,
    ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Values(1, 2, 3, 7, 300),
                       ::testing::Values(Placement::kAligned, Placement::kByteMisaligned)),
    divide_name);

// ---- Semantics spelled out with literal values ----

TEST(ReduceSemantics, IntegerSumAndProdWrapAround) {
  int32_t i32[] = {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
  const int32_t i32_add[] = {1, -1};
  accumulate(DataType::kInt32, ReduceOp::kSum, i32, i32_add, 2);
  EXPECT_EQ(i32[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32[1], std::numeric_limits<int32_t>::max());

  int64_t i64[] = {int64_t{1} << 62};
  const int64_t i64_mul[] = {4};
  accumulate(DataType::kInt64, ReduceOp::kProd, i64, i64_mul, 1);
  EXPECT_EQ(i64[0], 0);

  uint8_t u8[] = {250, 16, 200};
  const uint8_t u8_other[] = {10, 16, 3};
  uint8_t sums[3];
  uint8_t prods[3];
  combine(DataType::kUInt8, ReduceOp::kSum, sums, u8, u8_other, 3);
  combine(DataType::kUInt8, ReduceOp::kProd, prods, u8, u8_other, 3);
  EXPECT_EQ(sums[0], 4);
  EXPECT_EQ(prods[1], 0);
  EXPECT_EQ(prods[2], static_cast<uint8_t>(600));
}

TEST(ReduceSemantics, MinMaxPropagateNaNFromEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float a[] = {nan, 1.0f, nan, -inf, 2.0f};
  const float b[] = {1.0f, nan, nan, nan, -3.0f};
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    float out[5];
    combine(DataType::kFloat32, op, out, a, b, 5);
    EXPECT_TRUE(std::isnan(out[0])) << to_string(op);
    EXPECT_TRUE(std::isnan(out[1])) << to_string(op);
    EXPECT_TRUE(std::isnan(out[2])) << to_string(op);
    EXPECT_TRUE(std::isnan(out[3])) << to_string(op);
    EXPECT_EQ(out[4], op == ReduceOp::kMin ? -3.0f : 2.0f);
  }
  // The same through the widened half path.
  const uint16_t h_nan = float_to_bf16(nan);
  uint16_t h[] = {float_to_bf16(1.0f), h_nan};
  const uint16_t h_other[] = {h_nan, float_to_bf16(5.0f)};
  accumulate(DataType::kBFloat16, ReduceOp::kMax, h, h_other, 2);
  EXPECT_TRUE(std::isnan(bf16_to_float(h[0])));
  EXPECT_TRUE(std::isnan(bf16_to_float(h[1])));
}

TEST(ReduceSemantics, InfinitiesFollowIeeeRules) {
  const double inf = std::numeric_limits<double>::infinity();
  double sum[] = {inf, inf, 1.0};
  const double other[] = {-inf, 1.0, -inf};
  accumulate(DataType::kFloat64, ReduceOp::kSum, sum, other, 3);
  EXPECT_TRUE(std::isnan(sum[0]));
  EXPECT_EQ(sum[1], inf);
  EXPECT_EQ(sum[2], -inf);
}

TEST(ReduceSemantics, HalfPrecisionRoundsEachStepToNearestEven) {
  // 2048 + 1 is a tie between 2048 and 2050 in float16 (spacing 2): even mantissa wins.
  uint16_t f16[] = {float_to_f16(2048.0f), float_to_f16(2048.0f)};
  const uint16_t f16_add[] = {float_to_f16(1.0f), float_to_f16(3.0f)};
  accumulate(DataType::kFloat16, ReduceOp::kSum, f16, f16_add, 2);
  EXPECT_EQ(f16_to_float(f16[0]), 2048.0f);
  EXPECT_EQ(f16_to_float(f16[1]), 2052.0f);
  // bfloat16 has 8 significant bits: 256 + 1 ties to 256, 256 + 3 goes to 260.
  uint16_t bf[] = {float_to_bf16(256.0f), float_to_bf16(256.0f)};
  const uint16_t bf_add[] = {float_to_bf16(1.0f), float_to_bf16(3.0f)};
  accumulate(DataType::kBFloat16, ReduceOp::kSum, bf, bf_add, 2);
  EXPECT_EQ(bf16_to_float(bf[0]), 256.0f);
  EXPECT_EQ(bf16_to_float(bf[1]), 260.0f);
  // Overflowing float16 gives infinity.
  uint16_t big[] = {float_to_f16(60000.0f)};
  accumulate(DataType::kFloat16, ReduceOp::kSum, big, big, 1);
  EXPECT_EQ(big[0], 0x7c00);
}

TEST(ReduceSemantics, AvgReducesLikeSumThenDivideAverages) {
  float a[] = {1.0f, 2.0f, 3.0f};
  const float b[] = {3.0f, 4.0f, 6.0f};
  accumulate(DataType::kFloat32, ReduceOp::kAvg, a, b, 3);
  EXPECT_EQ(a[0], 4.0f);
  divide(DataType::kFloat32, a, 3, 2);
  EXPECT_EQ(a[0], 2.0f);
  EXPECT_EQ(a[1], 3.0f);
  EXPECT_EQ(a[2], 4.5f);
}

TEST(ReduceSemantics, IntegerDivideTruncatesTowardZero) {
  int32_t i32[] = {7, -7, 6, std::numeric_limits<int32_t>::min()};
  divide(DataType::kInt32, i32, 4, 2);
  EXPECT_EQ(i32[0], 3);
  EXPECT_EQ(i32[1], -3);
  EXPECT_EQ(i32[2], 3);
  EXPECT_EQ(i32[3], std::numeric_limits<int32_t>::min() / 2);
  int64_t i64[] = {-9};
  divide(DataType::kInt64, i64, 1, 4);
  EXPECT_EQ(i64[0], -2);
  uint8_t u8[] = {255, 200};
  divide(DataType::kUInt8, u8, 2, 300);  // divisor wider than the type is not wrapped to 44
  EXPECT_EQ(u8[0], 0);
  EXPECT_EQ(u8[1], 0);
  uint8_t u8b[] = {255};
  divide(DataType::kUInt8, u8b, 1, 2);
  EXPECT_EQ(u8b[0], 127);
}

// ---- Argument checking ----

template <typename F>
ErrorCode error_code_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // nothing thrown: fails the comparison below
}

TEST(ReduceArguments, RejectsUnknownTypeAndOp) {
  float x[1] = {1.0f};
  const auto bad_type = static_cast<DataType>(kNumDataTypes);
  const auto bad_op = static_cast<ReduceOp>(-1);
  EXPECT_EQ(error_code_of([&] { accumulate(bad_type, ReduceOp::kSum, x, x, 1); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([&] { accumulate(DataType::kFloat32, bad_op, x, x, 1); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([&] { combine(DataType::kFloat32, bad_op, x, x, x, 1); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([&] { divide(bad_type, x, 1, 2); }), ErrorCode::kInvalidArgument);
}

TEST(ReduceArguments, RejectsNullBuffersButAcceptsEmptyOnes) {
  float x[1] = {1.0f};
  EXPECT_EQ(error_code_of([&] { accumulate(DataType::kFloat32, ReduceOp::kSum, nullptr, x, 1); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([&] { combine(DataType::kFloat32, ReduceOp::kSum, x, x, nullptr, 1); }),
            ErrorCode::kInvalidArgument);
  EXPECT_NO_THROW(accumulate(DataType::kFloat32, ReduceOp::kSum, nullptr, nullptr, 0));
  EXPECT_NO_THROW(combine(DataType::kInt64, ReduceOp::kMax, nullptr, nullptr, nullptr, 0));
  EXPECT_NO_THROW(divide(DataType::kUInt8, nullptr, 0, 3));
}

TEST(ReduceArguments, RejectsNonPositiveDivisor) {
  int32_t x[1] = {4};
  EXPECT_EQ(error_code_of([&] { divide(DataType::kInt32, x, 1, 0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([&] { divide(DataType::kFloat32, x, 1, -2); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(x[0], 4);
}

}  // namespace
}  // namespace tutti::reduce

// ---- Scaled sums (allreduce's prescale/postscale) ----

namespace tutti::reduce {
namespace {

double as_double(DataType t, const std::byte* p) {
  switch (t) {
    case DataType::kFloat32:
      return load<float>(p);
    case DataType::kFloat64:
      return load<double>(p);
    case DataType::kFloat16:
      return f16_to_float(load<uint16_t>(p));
    default:
      return bf16_to_float(load<uint16_t>(p));
  }
}

void put_double(DataType t, std::byte* p, double v) {
  switch (t) {
    case DataType::kFloat32:
      return store(p, static_cast<float>(v));
    case DataType::kFloat64:
      return store(p, v);
    case DataType::kFloat16:
      return store(p, float_to_f16(static_cast<float>(v)));
    default:
      return store(p, float_to_bf16(static_cast<float>(v)));
  }
}

class ScaledTest : public ::testing::TestWithParam<std::tuple<DataType, size_t>> {};

// Small integers times powers of two: every intermediate is exact in every floating type, so the
// results compare exactly, misaligned (byte offset 1) and aliased buffers included.
TEST_P(ScaledTest, MatchesExactArithmetic) {
  const auto [type, count] = GetParam();
  const size_t es = element_size(type);
  std::vector<std::byte> a(count * es + 1), b(count * es + 1), out(count * es + 1);
  std::byte* pa = a.data() + 1;  // misaligned on purpose
  for (size_t i = 0; i < count; ++i) {
    put_double(type, pa + i * es, static_cast<double>(i % 7));
    put_double(type, b.data() + i * es, static_cast<double>(i % 5) - 2);
  }
  combine_scaled(type, out.data(), pa, 0.5, b.data(), 2.0, 0.25, count);
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(as_double(type, out.data() + i * es),
              (static_cast<double>(i % 7) * 0.5 + (static_cast<double>(i % 5) - 2) * 2.0) * 0.25)
        << i;
  // dst aliasing a, then scale in place.
  combine_scaled(type, pa, pa, 1.0, b.data(), 1.0, 1.0, count);
  scale(type, pa, pa, 4.0, count);
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(as_double(type, pa + i * es),
              (static_cast<double>(i % 7) + static_cast<double>(i % 5) - 2) * 4.0)
        << i;
  // Three sources, the output aliasing the first; a copy alongside.
  std::vector<std::byte> copy(count * es);
  std::vector<std::byte> c = b;
  const void* srcs[] = {c.data(), b.data(), b.data()};
  reduce_many_scaled(type, c.data(), copy.data(), srcs, count, 0.5, 8.0);
  for (size_t i = 0; i < count; ++i) {
    const double want = 3 * (static_cast<double>(i % 5) - 2) * 0.5 * 8.0;
    ASSERT_EQ(as_double(type, c.data() + i * es), want) << i;
    ASSERT_EQ(as_double(type, copy.data() + i * es), want) << i;
  }
  // The same into a separate output with streaming stores into both out and copy (the shm
  // allreduce's out-of-place path), from an offset that is not 16-byte aligned.
  std::vector<std::byte> streamed((count + 1) * es), streamed_copy(count * es);
  const void* sources[] = {b.data(), b.data(), b.data()};
  reduce_many_scaled(type, streamed.data() + es, streamed_copy.data(), sources, count, 0.5, 8.0,
                     CopyStores::kStreaming, CopyStores::kStreaming);
  for (size_t i = 0; i < count; ++i) {
    const double want = 3 * (static_cast<double>(i % 5) - 2) * 0.5 * 8.0;
    ASSERT_EQ(as_double(type, streamed.data() + (i + 1) * es), want) << i;
    ASSERT_EQ(as_double(type, streamed_copy.data() + i * es), want) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    FloatingTypes, ScaledTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{255}, size_t{257},
                                         size_t{1000})));

TEST(ScaledRefusals, IntegersHaveNoScale) {
  int32_t x[2] = {1, 2};
  EXPECT_THROW(combine_scaled(DataType::kInt32, x, x, 2.0, x, 2.0, 1.0, 2), Error);
  EXPECT_THROW(scale(DataType::kBool, x, x, 2.0, 1), Error);
}

}  // namespace
}  // namespace tutti::reduce
