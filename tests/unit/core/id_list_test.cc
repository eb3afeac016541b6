#include "core/id_list.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tutti {
namespace {

using Ids = std::vector<int>;

TEST(IdList, RoundTripsInTheGivenOrder) {
  for (const Ids& ids : {Ids{}, Ids{0}, Ids{3, 0, 5}, Ids{0, 1, 2, 3}, Ids{2147483646}})
    EXPECT_EQ(parse_ids(format_ids(ids)), ids);
  EXPECT_EQ(format_ids(Ids{3, 0, 5}), "3,0,5");
  EXPECT_EQ(format_ids(Ids{}), "");
  EXPECT_EQ(parse_ids(""), Ids{});
}

TEST(IdList, RefusesAnythingFormatIdsDoesNotWrite) {
  for (const char* bad : {" ", "1, 2", " 1", "1 ", "1,,2", ",1", "1,", ",", "-1", "+1", "x", "1x",
                          "0x10", "1.5", "99999999999", "1;2"})
    EXPECT_EQ(parse_ids(bad), std::nullopt) << "'" << bad << "'";
}

TEST(IdList, RefusesAnIdTwice) {
  EXPECT_EQ(parse_ids("1,2,1"), std::nullopt);
  EXPECT_EQ(parse_ids("0,0"), std::nullopt);
}

TEST(IdList, RefusesIdsFromTheLimitOn) {
  EXPECT_EQ(parse_ids("0,3", 4), (Ids{0, 3}));
  EXPECT_EQ(parse_ids("0,4", 4), std::nullopt);
  EXPECT_EQ(parse_ids("", 0), Ids{});
  EXPECT_EQ(parse_ids("0", 0), std::nullopt);
}

}  // namespace
}  // namespace tutti
