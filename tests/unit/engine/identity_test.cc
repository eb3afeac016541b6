// A joined rank contributes the op's identity: x op identity must be x for every dtype and op the
// op is defined on, checked with the real reduce kernels.
#include "engine/identity.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "reduce/reduce.hpp"

namespace tutti::engine {
namespace {

TEST(Identity, LeavesEveryValueAsItIsForEveryDtypeAndOp) {
  std::mt19937 rng(7);
  for (int t = 0; t < kNumDataTypes; ++t) {
    for (int o = 0; o < kNumReduceOps; ++o) {
      const auto type = static_cast<DataType>(t);
      const auto op = static_cast<ReduceOp>(o);
      if (!supports(type, op) || op == ReduceOp::kAvg) continue;
      const size_t n = 257;
      const size_t bytes = n * element_size(type);
      std::vector<unsigned char> x(bytes);
      for (auto& b : x) b = static_cast<unsigned char>(rng());
      if (type == DataType::kBool)
        for (auto& b : x) b &= 1;
      if (type == DataType::kFloat16 || type == DataType::kBFloat16)
        for (size_t i = 1; i < bytes; i += 2) x[i] &= 0x3F;  // finite values, no NaN
      if (type == DataType::kFloat32)
        for (size_t i = 3; i < bytes; i += 4) x[i] &= 0x3F;
      if (type == DataType::kFloat64)
        for (size_t i = 7; i < bytes; i += 8) x[i] &= 0x3F;
      std::vector<unsigned char> id(bytes), out(bytes);
      fill_identity(id.data(), n, type, op);
      reduce::combine(type, op, out.data(), x.data(), id.data(), n);
      EXPECT_EQ(0, std::memcmp(out.data(), x.data(), bytes))
          << to_string(type) << " " << to_string(op);
    }
  }
}

TEST(Identity, IsZeroForSumAndAvg) {
  std::vector<float> f(9, 5.0f);
  fill_identity(f.data(), f.size(), DataType::kFloat32, ReduceOp::kAvg);
  for (float v : f) EXPECT_EQ(0.0f, v);
}

}  // namespace
}  // namespace tutti::engine
