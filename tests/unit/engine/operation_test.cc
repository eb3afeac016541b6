#include "engine/operation.hpp"

#include <gtest/gtest.h>

namespace tutti::engine {
namespace {

TEST(OpSpec, RoundTripsThroughTheWire) {
  OpSpec s;
  s.kind = OpKind::kAlltoall;
  s.type = DataType::kBFloat16;
  s.count = 33;
  s.splits = {1, 0, 2};
  s.prescale = 0.5;
  net::wire::Writer w;
  s.encode(w);
  net::wire::Reader r(w.view(), "test");
  EXPECT_EQ(s, OpSpec::decode(r, 3));
  EXPECT_TRUE(r.done());
}

TEST(OpSpec, RefusesSplitsForMoreRanksThanTheWorld) {
  OpSpec s;
  s.kind = OpKind::kAlltoall;
  s.splits = {1, 1, 1, 1};
  net::wire::Writer w;
  s.encode(w);
  net::wire::Reader r(w.view(), "test");
  EXPECT_THROW(OpSpec::decode(r, 2), Error);
}

TEST(OpSpec, AgreementIgnoresPerRankPartsOnly) {
  OpSpec a;
  a.kind = OpKind::kAllgather;
  a.count = 4;
  a.rows = 1;
  OpSpec b = a;
  b.rows = 7;
  EXPECT_TRUE(a.agrees_with(b));
  b.count = 5;
  EXPECT_FALSE(a.agrees_with(b));
  EXPECT_EQ("row size 4 vs 5", a.difference(b));
  OpSpec c;
  c.kind = OpKind::kBroadcast;
  c.root = 0;
  OpSpec d = c;
  d.root = 1;
  EXPECT_FALSE(c.agrees_with(d));
  OpSpec x;
  OpSpec y = x;
  y.op = ReduceOp::kMax;
  EXPECT_FALSE(x.agrees_with(y));
  EXPECT_EQ("op sum vs max", x.difference(y));
}

}  // namespace
}  // namespace tutti::engine
