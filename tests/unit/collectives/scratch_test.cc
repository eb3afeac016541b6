#include "collectives/scratch.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace tutti::collectives {
namespace {

bool aligned64(const std::byte* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(Scratch, BuffersAreAlignedAndAsLargeAsAsked) {
  Scratch scratch;
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{4097}, size_t{1} << 20}) {
    auto buf = scratch.get(0, bytes);
    EXPECT_GE(buf.size(), bytes);
    EXPECT_TRUE(aligned64(buf.data())) << bytes;
    std::memset(buf.data(), 0xab, bytes);  // the whole span is writable (ASan checks this)
  }
}

TEST(Scratch, NeverShrinksAndKeepsTheBufferForSmallerRequests) {
  Scratch scratch;
  auto large = scratch.get(0, 1 << 16);
  auto small = scratch.get(0, 100);
  EXPECT_EQ(small.data(), large.data());
  auto again = scratch.get(0, 1 << 16);
  EXPECT_EQ(again.data(), large.data());
}

TEST(Scratch, GrowsToTheLargestRequest) {
  Scratch scratch;
  scratch.get(0, 128);
  auto grown = scratch.get(0, 3 << 20);
  ASSERT_GE(grown.size(), size_t{3} << 20);
  grown[grown.size() - 1] = std::byte{7};
  EXPECT_TRUE(aligned64(grown.data()));
}

TEST(Scratch, SlotsAreIndependent) {
  Scratch scratch;
  auto a = scratch.get(0, 256);
  auto b = scratch.get(3, 256);
  EXPECT_NE(a.data(), b.data());
  std::memset(a.data(), 1, a.size());
  std::memset(b.data(), 2, b.size());
  EXPECT_EQ(a[255], std::byte{1});
  EXPECT_EQ(scratch.get(0, 16).data(), a.data());
}

TEST(Scratch, ZeroBytesIsAnEmptySpan) {
  Scratch scratch;
  EXPECT_TRUE(scratch.get(2, 0).empty());
}

}  // namespace
}  // namespace tutti::collectives
