#include "core/buffer_overlap.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "tutti/error.hpp"

namespace tutti {
namespace {

// Addresses only: the checks never touch memory.
const void* at(uintptr_t address) {
  return reinterpret_cast<const void*>(address);
}

constexpr uintptr_t kBase = 0x10000;
constexpr std::string_view kSame = "the same buffer as send and recv (in place)";

// The message of refuse_overlap's error, or "" when it accepts.
std::string refusal(ByteRange send, ByteRange recv, bool in_place_layout) {
  try {
    refuse_overlap("allreduce", 3, send, recv, in_place_layout, kSame);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(BufferOverlap, RangesOfBuffers) {
  EXPECT_EQ(ByteRange::of(at(kBase), 6, DataType::kFloat32).begin, kBase);
  EXPECT_EQ(ByteRange::of(at(kBase), 6, DataType::kFloat32).bytes, 24u);
  EXPECT_EQ(ByteRange::of(at(kBase), 6, DataType::kFloat64, 4).bytes, 192u);
  // Count 0, a null buffer, an unknown type, a size past any address space: empty.
  EXPECT_EQ(ByteRange::of(at(kBase), 0, DataType::kFloat32).bytes, 0u);
  EXPECT_EQ(ByteRange::of(nullptr, 6, DataType::kFloat32).bytes, 0u);
  EXPECT_EQ(ByteRange::of(at(kBase), 6, static_cast<DataType>(99)).bytes, 0u);
  EXPECT_EQ(
      ByteRange::of(at(kBase), std::numeric_limits<size_t>::max() / 2, DataType::kInt32).bytes, 0u);
  EXPECT_EQ(
      ByteRange::of(at(kBase), 1 << 20, DataType::kInt8, std::numeric_limits<size_t>::max()).bytes,
      0u);
  EXPECT_EQ(ByteRange::of(at(std::numeric_limits<uintptr_t>::max() - 8), 4, DataType::kInt32).bytes,
            0u);
  // A rank's block: blocks x count elements in.
  EXPECT_EQ(ByteRange::at(at(kBase), 2, 3, DataType::kFloat32), kBase + 24);
  EXPECT_EQ(ByteRange::at(at(kBase), 0, 3, DataType::kFloat32), kBase);
  EXPECT_EQ(ByteRange::at(nullptr, 2, 3, DataType::kFloat32), 0u);
  EXPECT_EQ(ByteRange::at(at(kBase), std::numeric_limits<size_t>::max(), 3, DataType::kFloat32),
            0u);
}

TEST(BufferOverlap, OverlapIsSharingAByte) {
  const ByteRange a{kBase, 8};
  EXPECT_TRUE(overlaps(a, a));
  EXPECT_TRUE(overlaps(a, {kBase + 7, 8}));   // the last byte
  EXPECT_TRUE(overlaps({kBase + 7, 8}, a));   // either order
  EXPECT_TRUE(overlaps(a, {kBase + 2, 2}));   // inside
  EXPECT_TRUE(overlaps({kBase - 4, 32}, a));  // around
  EXPECT_FALSE(overlaps(a, {kBase + 8, 8}));  // touching: the next byte
  EXPECT_FALSE(overlaps({kBase + 8, 8}, a));
  EXPECT_FALSE(overlaps(a, {kBase - 8, 8}));
  EXPECT_FALSE(overlaps(a, {kBase + 4, 0}));  // empty, even inside
  EXPECT_FALSE(overlaps({kBase, 0}, {kBase, 0}));
}

TEST(BufferOverlap, PartialOverlapIsRefusedNamingCallRankAndRanges) {
  // The report's case: allreduce(a, a + 2, 6 floats).
  const auto send = ByteRange::of(at(kBase), 6, DataType::kFloat32);
  const auto recv = ByteRange::of(at(kBase + 8), 6, DataType::kFloat32);
  const std::string message = refusal(send, recv, false);
  EXPECT_NE(message.find("allreduce on rank 3"), std::string::npos) << message;
  EXPECT_NE(message.find("send [0x10000, 0x10018) (24 bytes)"), std::string::npos) << message;
  EXPECT_NE(message.find("recv [0x10008, 0x10020) (24 bytes)"), std::string::npos) << message;
  EXPECT_NE(message.find("overlap in 16 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find(kSame), std::string::npos) << message;
  // recv before send, one byte shared, one inside the other: refused all the same.
  EXPECT_NE(refusal(recv, send, false), "");
  EXPECT_NE(refusal({kBase, 8}, {kBase + 7, 8}, false), "");
  EXPECT_NE(refusal({kBase + 4, 4}, {kBase, 16}, false), "");
}

TEST(BufferOverlap, AdjacentEmptyAndInPlaceAreTaken) {
  EXPECT_EQ(refusal({kBase, 24}, {kBase + 24, 24}, false), "");  // touching
  EXPECT_EQ(refusal({kBase + 24, 24}, {kBase, 24}, false), "");
  EXPECT_EQ(refusal({kBase, 0}, {kBase, 24}, false), "");  // count 0
  EXPECT_EQ(refusal({kBase, 24}, {kBase, 24}, true), "");  // the same buffer: in place
  // The same address is only in place where the caller says the layout is: allgather's send at
  // recv's start is this rank's block on rank 0 only.
  EXPECT_NE(refusal({kBase, 24}, {kBase, 24}, false), "");
}

TEST(BufferOverlap, AllgatherTakesThisRanksBlockOnly) {
  // 4 ranks, 3 float64 per rank, on rank 2: recv holds 12, the block is 48 bytes in.
  const int rank = 2;
  const void* recv = at(kBase);
  const auto recv_range = ByteRange::of(recv, 3, DataType::kFloat64, 4);
  for (uintptr_t send : {kBase + 48, kBase + 40, kBase + 56, kBase, kBase + 72, kBase + 96}) {
    const bool slot = send == ByteRange::at(recv, rank, 3, DataType::kFloat64);
    const auto send_range = ByteRange::of(at(send), 3, DataType::kFloat64);
    const bool refused = [&] {
      try {
        refuse_overlap("allgather", rank, send_range, recv_range, slot, "in place");
      } catch (const Error&) {
        return true;
      }
      return false;
    }();
    // In place at the block, apart past the end, refused anywhere else inside.
    EXPECT_EQ(refused, send != kBase + 48 && send != kBase + 96) << std::hex << send;
  }
}

}  // namespace
}  // namespace tutti
