#include <gtest/gtest.h>

#include "collectives/collectives.hpp"
#include "core/error.hpp"

namespace tutti::collectives {
namespace {

TEST(Algorithm, NamesRoundTrip) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kHalvingDoubling, Algorithm::kShm}) {
    EXPECT_EQ(parse_algorithm(to_string(a)), a);
  }
  EXPECT_EQ(parse_algorithm("HD"), Algorithm::kHalvingDoubling);
  EXPECT_EQ(parse_algorithm("Ring"), Algorithm::kRing);
  EXPECT_EQ(parse_algorithm("SHM"), Algorithm::kShm);
}

TEST(Algorithm, UnknownNameIsAConfigErrorNamingIt) {
  try {
    parse_algorithm("butterfly");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("butterfly"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("TUTTI_ALGO"), std::string::npos);
  }
  EXPECT_THROW(parse_algorithm(""), Error);
}

TEST(SelectAllreduce, SmallMessagesUseHalvingDoubling) {
  for (int size : {2, 3, 8, 64}) {
    EXPECT_EQ(select_allreduce(8, size), Algorithm::kHalvingDoubling) << size;
    EXPECT_EQ(select_allreduce(64 << 10, size), Algorithm::kHalvingDoubling) << size;
  }
}

TEST(SelectAllreduce, MediumMessagesUseTheTreeOnLargerWorlds) {
  EXPECT_EQ(select_allreduce(1 << 20, 8), Algorithm::kTree);
  EXPECT_EQ(select_allreduce(4 << 20, 16), Algorithm::kTree);
  EXPECT_EQ(select_allreduce(1 << 20, 2), Algorithm::kRing);
}

TEST(SelectAllreduce, LargeMessagesUseTheRing) {
  for (int size : {2, 3, 8, 64})
    EXPECT_EQ(select_allreduce(size_t{1} << 30, size), Algorithm::kRing);
}

TEST(SelectAllreduce, NeverReturnsAuto) {
  for (int size = 1; size <= 17; ++size) {
    for (size_t bytes = 0; bytes < (size_t{1} << 34); bytes = bytes * 2 + 1) {
      for (bool window : {false, true})
        EXPECT_NE(select_allreduce(bytes, size, window), Algorithm::kAuto) << bytes << " " << size;
    }
  }
}

TEST(SelectAllreduce, SharedMemoryWindowWinsAtEverySize) {
  for (int size : {2, 3, 4, 8})
    for (size_t bytes : {size_t{8}, size_t{4} << 10, size_t{1} << 20, size_t{256} << 20})
      EXPECT_EQ(select_allreduce(bytes, size, true), Algorithm::kShm) << bytes << " " << size;
}

TEST(SelectAllreduce, WithoutAWindowNeverPicksShm) {
  for (int size = 1; size <= 9; ++size)
    for (size_t bytes = 1; bytes < (size_t{1} << 32); bytes *= 4)
      EXPECT_NE(select_allreduce(bytes, size, false), Algorithm::kShm) << bytes << " " << size;
}

}  // namespace
}  // namespace tutti::collectives
