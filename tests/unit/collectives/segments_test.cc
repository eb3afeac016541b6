// SegmentView: the pieces of a range of the tensors' concatenation, across tensor boundaries.
#include "collectives/segments.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tutti::collectives {
namespace {

TEST(SegmentView, SplitsARangeAtTensorBoundariesSkippingEmptyTensors) {
  std::vector<float> a(3), b(0), c(5), out(8);
  std::vector<Segment> segs{
      {a.data(), out.data(), 3}, {b.data(), b.data(), 0}, {c.data(), out.data() + 3, 5}};
  SegmentView v(segs, sizeof(float));
  EXPECT_EQ(8u, v.count());
  std::vector<std::tuple<const std::byte*, std::byte*, size_t, size_t>> got;
  v.pieces(2, 4, [&](const std::byte* in, std::byte* o, size_t at, size_t n) {
    got.emplace_back(in, o, at, n);
  });
  ASSERT_EQ(2u, got.size());
  EXPECT_EQ(reinterpret_cast<const std::byte*>(a.data() + 2), std::get<0>(got[0]));
  EXPECT_EQ(0u, std::get<2>(got[0]));
  EXPECT_EQ(1u, std::get<3>(got[0]));
  EXPECT_EQ(reinterpret_cast<const std::byte*>(c.data()), std::get<0>(got[1]));
  EXPECT_EQ(reinterpret_cast<std::byte*>(out.data() + 3), std::get<1>(got[1]));
  EXPECT_EQ(1u, std::get<2>(got[1]));
  EXPECT_EQ(3u, std::get<3>(got[1]));
  size_t calls = 0;
  v.pieces(7, 0, [&](const std::byte*, std::byte*, size_t, size_t) { ++calls; });
  v.pieces(3, 5, [&](const std::byte*, std::byte*, size_t at, size_t n) {
    ++calls;
    EXPECT_EQ(0u, at);
    EXPECT_EQ(5u, n);
  });
  EXPECT_EQ(1u, calls);
}

TEST(TensorsApart, OnlyBuffersThatOverlapAnotherAreNotApart) {
  std::vector<float> m(16);
  float* p = m.data();
  // Back to back, in place and out of place: apart.
  EXPECT_TRUE(tensors_apart(std::vector<Segment>{{p, p, 4}, {p + 4, p + 8, 4}}, 4));
  // Empty tensors are no buffers at all, wherever they point.
  EXPECT_TRUE(tensors_apart(std::vector<Segment>{{p, p, 4}, {p, p, 0}}, 4));
  // The same buffer under two names; one element shared; an output that is another's input; a
  // tensor's own send and recv shifted by one element.
  EXPECT_FALSE(tensors_apart(std::vector<Segment>{{p, p, 4}, {p, p, 4}}, 4));
  EXPECT_FALSE(tensors_apart(std::vector<Segment>{{p, p, 4}, {p + 3, p + 3, 4}}, 4));
  EXPECT_FALSE(tensors_apart(std::vector<Segment>{{p, p + 4, 4}, {p + 4, p + 8, 4}}, 4));
  EXPECT_FALSE(tensors_apart(std::vector<Segment>{{p, p + 1, 4}}, 4));
}

TEST(TensorsApart, TheOrderOfTheTensorsDoesNotChangeTheAnswer) {
  std::vector<float> m(16);
  float* p = m.data();
  // Address order, its reverse (a backward pass) and neither: apart, and overlapping, alike.
  EXPECT_TRUE(
      tensors_apart(std::vector<Segment>{{p + 8, p + 8, 4}, {p + 4, p + 4, 4}, {p, p, 4}}, 4));
  EXPECT_TRUE(
      tensors_apart(std::vector<Segment>{{p + 4, p + 4, 4}, {p + 8, p + 8, 4}, {p, p, 4}}, 4));
  EXPECT_FALSE(
      tensors_apart(std::vector<Segment>{{p + 8, p + 8, 4}, {p + 3, p + 3, 4}, {p, p, 4}}, 4));
  EXPECT_FALSE(
      tensors_apart(std::vector<Segment>{{p + 3, p + 3, 4}, {p + 8, p + 8, 4}, {p, p, 4}}, 4));
  EXPECT_FALSE(
      tensors_apart(std::vector<Segment>{{p, p, 4}, {p + 3, p + 3, 4}, {p + 8, p + 8, 4}}, 4));
  // Out of place in reverse order: a send that is the previous tensor's recv.
  EXPECT_FALSE(tensors_apart(std::vector<Segment>{{p + 8, p + 12, 4}, {p + 4, p + 8, 4}}, 4));
}

TEST(Coalesced, MergesOnlyTensorsThatContinueThePreviousInMemoryOrder) {
  std::vector<float> in(32), out(32);
  float* a = in.data();
  float* b = out.data();
  const auto same = [](const Segment& x, const void* send, const void* recv, size_t count) {
    return x.send == send && x.recv == recv && x.count == count;
  };
  // In place, back to back in order (one empty tensor between): one segment.
  auto got = coalesced(std::vector<Segment>{{a, a, 4}, {a + 4, a + 4, 0}, {a + 4, a + 4, 4}}, 4);
  ASSERT_EQ(1u, got.size());
  EXPECT_TRUE(same(got[0], a, a, 8));
  // Out of place, both sides continuing: one segment; only one side continuing: two.
  got = coalesced(std::vector<Segment>{{a, b, 4}, {a + 4, b + 4, 4}, {a + 8, b + 16, 4}}, 4);
  ASSERT_EQ(2u, got.size());
  EXPECT_TRUE(same(got[0], a, b, 8));
  EXPECT_TRUE(same(got[1], a + 8, b + 16, 4));
  // Back to back but in reverse order (a backward pass over one flat buffer): merging would
  // reorder the logical vector, so nothing merges.
  got = coalesced(std::vector<Segment>{{a + 8, a + 8, 4}, {a + 4, a + 4, 4}, {a, a, 4}}, 4);
  ASSERT_EQ(3u, got.size());
  EXPECT_TRUE(same(got[2], a, a, 4));
  // The element size counts: 4 floats of 8-byte elements end 32 bytes on.
  got = coalesced(std::vector<Segment>{{a, a, 2}, {a + 4, a + 4, 2}}, 8);
  ASSERT_EQ(1u, got.size());
  EXPECT_EQ(4u, got[0].count);
  EXPECT_TRUE(coalesced(std::vector<Segment>{}, 4).empty());
}

}  // namespace
}  // namespace tutti::collectives
