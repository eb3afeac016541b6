// pieces_from: the spans a framed channel hands its stream for one call, from an offset into a
// message's pieces (empty ones skipped), at most as many as fit in the array and (with `enough`)
// no more than cover the bytes the stream can take. A span is never cut: the stream moves what it
// can of the last one.
#include "transport/pieces.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace tutti::transport {
namespace {

struct Message {
  std::array<std::byte, 100> memory{};
  PieceList pieces;
  // Pieces of 10, 30, 0 and 20 bytes (an empty one included).
  Message() {
    pieces = {std::span(memory).subspan(0, 10), std::span(memory).subspan(10, 30),
              std::span(memory).subspan(40, 0), std::span(memory).subspan(40, 20)};
  }
};

TEST(PiecesFrom, StartsInsideThePieceThatHoldsTheOffset) {
  Message m;
  std::array<std::span<const std::byte>, 8> array;
  const std::span<std::span<const std::byte>> out(array);
  ASSERT_EQ(pieces_from(m.pieces, 15, out), 2u);
  EXPECT_EQ(out[0].data(), m.memory.data() + 15);
  EXPECT_EQ(out[0].size(), 25u);
  EXPECT_EQ(out[1].data(), m.memory.data() + 40);  // the empty piece is skipped
  EXPECT_EQ(out[1].size(), 20u);
  EXPECT_EQ(pieces_from(m.pieces, 60, out), 0u);  // at the end
}

TEST(PiecesFrom, StopsOnceTheListedBytesCoverEnough) {
  Message m;
  std::array<std::span<std::byte>, 8> array;
  const std::span<std::span<std::byte>> out(array);
  // 5 bytes are covered by the first piece alone, which is listed whole.
  ASSERT_EQ(pieces_from(m.pieces, 0, out, 5), 1u);
  EXPECT_EQ(out[0].size(), 10u);
  // 10 exactly: still one piece; 11: the second is needed too.
  EXPECT_EQ(pieces_from(m.pieces, 0, out, 10), 1u);
  EXPECT_EQ(pieces_from(m.pieces, 0, out, 11), 2u);
  // From inside the second piece, 26 bytes need the last one too (past the empty one).
  EXPECT_EQ(pieces_from(m.pieces, 15, out, 25), 1u);
  EXPECT_EQ(pieces_from(m.pieces, 15, out, 26), 2u);
  // No limit, and a limit of nothing.
  EXPECT_EQ(pieces_from(m.pieces, 0, out), 3u);
  EXPECT_EQ(pieces_from(m.pieces, 0, out, 0), 0u);
}

TEST(PiecesFrom, FillsNoMoreThanTheArrayHolds) {
  Message m;
  std::array<std::span<const std::byte>, 2> array;
  const std::span<std::span<const std::byte>> out(array);
  ASSERT_EQ(pieces_from(m.pieces, 0, out), 2u);
  EXPECT_EQ(out[1].size(), 30u);
}

}  // namespace
}  // namespace tutti::transport
