// ShmSegment in /dev/shm: a peer maps just the ring it writes and sees what the owner's side
// reads; a segment larger than /dev/shm's free space is refused up front with the size asked for
// and the free space in the message, and leaves nothing behind.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "transport/shm/ring.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport {
namespace {

std::string test_name(const char* what) {
  return fmt::format("/tutti-unit-{}-{}", getpid(), what);
}

SegmentPurpose purpose() {
  return {"rank 0", "a test's rings", "TUTTI_SHM_RING_BUDGET"};
}

TEST(ShmSegment, APeerMapsOnlyItsRingAndTalksThroughIt) {
  const std::string name = test_name("rings");
  auto own = ShmSegment::create(name, 3, 4096, purpose());
  auto peer = ShmSegment::open_ring(name, "rank 0", 2);
  EXPECT_EQ(peer->ring_capacity(), 4096u);
  EXPECT_THROW(peer->ring(1), Error);  // not mapped on the peer's side

  ShmRing writer(peer->ring(2), peer->ring_capacity());
  ShmRing reader(own->ring(2), own->ring_capacity());
  const std::array<std::byte, 5> sent{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                                      std::byte{5}};
  const std::span<const std::byte> out_piece(sent);
  ConstPieces out(&out_piece, 1);
  ASSERT_EQ(writer.write(out), sent.size());
  std::array<std::byte, 5> got{};
  const std::span<std::byte> in_piece(got);
  Pieces in(&in_piece, 1);
  ASSERT_EQ(reader.read(in), got.size());
  EXPECT_EQ(std::memcmp(got.data(), sent.data(), sent.size()), 0);
  // Ring 0 saw nothing.
  EXPECT_FALSE(ShmRing(own->ring(0), own->ring_capacity()).readable());
  EXPECT_THROW(ShmSegment::open_ring(name, "rank 0", 3), Error);
}

// room() and available() are what the framed channel lists pieces by: they must track each side's
// counter exactly, through a wrap, or a channel would list too little (stall) or too much.
TEST(ShmSegment, ARingsRoomAndFillFollowItsCounters) {
  const std::string name = test_name("room");
  auto own = ShmSegment::create(name, 1, 4096, purpose());
  ShmRing writer(own->ring(0), own->ring_capacity());
  ShmRing reader(own->ring(0), own->ring_capacity());
  EXPECT_EQ(writer.room(), 4096u);
  EXPECT_EQ(reader.available(), 0u);
  std::vector<std::byte> bytes(3000, std::byte{7});
  const std::span<const std::byte> out_piece(bytes);
  ASSERT_EQ(writer.write(ConstPieces(&out_piece, 1)), 3000u);
  EXPECT_EQ(writer.room(), 1096u);
  EXPECT_EQ(reader.available(), 3000u);
  std::vector<std::byte> got(2000);
  const std::span<std::byte> in_piece(got);
  ASSERT_EQ(reader.read(Pieces(&in_piece, 1)), 2000u);
  EXPECT_EQ(reader.available(), 1000u);
  // The writer's cached view of the reader's counter is stale until it has no room left by it.
  ASSERT_EQ(writer.write(ConstPieces(&out_piece, 1)), 1096u);
  EXPECT_EQ(writer.room(), 2000u);                             // a fresh look: the 2000 bytes read
  ASSERT_EQ(writer.write(ConstPieces(&out_piece, 1)), 2000u);  // wraps around the end
  EXPECT_EQ(writer.room(), 0u);
  EXPECT_EQ(reader.available(), 1000u);  // cached until it is used up
  ASSERT_EQ(reader.read(Pieces(&in_piece, 1)), 1000u);
  EXPECT_EQ(reader.available(), 3096u);
}

TEST(ShmSegment, ASegmentThatDoesNotFitIsRefusedNamingSizeAndFreeSpace) {
  struct statvfs vfs {};
  ASSERT_EQ(statvfs("/dev/shm", &vfs), 0);
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const size_t capacity = std::bit_ceil(static_cast<size_t>(free_bytes) + 1);
  const std::string name = test_name("huge");
  try {
    ShmSegment::create(name, 1, capacity, purpose());
    FAIL() << "a segment of " << capacity << " bytes fit in /dev/shm with " << free_bytes
           << " free";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kSystem);
    EXPECT_NE(message.find("rank 0"), std::string::npos) << message;
    EXPECT_NE(message.find("/dev/shm has"), std::string::npos) << message;
    EXPECT_NE(message.find("free of"), std::string::npos) << message;
    EXPECT_NE(message.find("TUTTI_SHM_RING_BUDGET"), std::string::npos) << message;
    EXPECT_NE(message.find("a test's rings"), std::string::npos) << message;
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + name));
}

}  // namespace
}  // namespace tutti::transport
