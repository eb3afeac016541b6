#include "core/base64.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tutti {
namespace {

TEST(Base64, RoundTripsAndRefusesNonCanonicalText) {
  for (std::string s : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar",
                                                std::string("\0\xff\x80", 3)})
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  for (const char* bad : {"Zm8", "Zm9=Zm8=", "Zm!=", "Zm9==", "Zn==", "====", "Zg=x"})
    EXPECT_EQ(base64_decode(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace tutti
