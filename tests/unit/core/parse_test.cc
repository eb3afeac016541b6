#include "core/parse.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace tutti {
namespace {

// The message of the kConfig error that parsing `f` throws, or "" when it does not throw.
template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig) << e.what();
    return e.what();
  }
  return "";
}

TEST(ParseInteger, AcceptsWholeNumbersInRange) {
  EXPECT_EQ(parse::integer("42", "X"), 42);
  EXPECT_EQ(parse::integer("+7", "X"), 7);
  EXPECT_EQ(parse::integer(" -3 ", "X", -5, 5), -3);
  EXPECT_EQ(parse::integer("9223372036854775807", "X"), INT64_MAX);
}

TEST(ParseInteger, RefusesOverflowInsteadOfWrapping) {
  // 2^32 once became rank 0 and 2^32 + 2 a world of 2.
  EXPECT_NE(config_error([] {
              parse::integer("4294967296", "TUTTI_RANK", 0, INT32_MAX - 1);
            }).find("TUTTI_RANK='4294967296' is out of range"),
            std::string::npos);
  EXPECT_NE(config_error([] { parse::integer("99999999999999999999", "X"); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(
      config_error([] { parse::integer("-1", "TUTTI_SIZE", 1, 100); }).find("between 1 and 100"),
      std::string::npos);
}

TEST(ParseInteger, RefusesWhatIsNotANumber) {
  for (const char* bad : {"", " ", "1x", "0x10", "1.5", "--1", "1 2"})
    EXPECT_NE(config_error([&] { parse::integer(bad, "X"); }).find("is not a whole number"),
              std::string::npos)
        << bad;
}

TEST(ParseBytes, AcceptsSuffixes) {
  EXPECT_EQ(parse::bytes("4096", "X"), 4096u);
  EXPECT_EQ(parse::bytes("64K", "X"), 64u << 10);
  EXPECT_EQ(parse::bytes("64kib", "X"), 64u << 10);
  EXPECT_EQ(parse::bytes("2MB", "X"), 2u << 20);
  EXPECT_EQ(parse::bytes("3G", "X"), 3ull << 30);
  EXPECT_EQ(parse::bytes("1T", "X"), 1ull << 40);
  EXPECT_EQ(parse::bytes("0", "X"), 0u);
}

TEST(ParseBytes, RefusesOverflowAndRange) {
  // 17179869185G = 2^34 + 1 GiB wrapped to 1 GiB before.
  EXPECT_NE(config_error([] {
              parse::bytes("17179869185G", "TUTTI_SEGMENT_BYTES");
            }).find("TUTTI_SEGMENT_BYTES='17179869185G' is out of range"),
            std::string::npos);
  EXPECT_NE(config_error([] { parse::bytes("99999999999999999999", "X"); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(
      config_error([] { parse::bytes("2G", "X", 1, 1 << 30); }).find("between 1 and 1073741824"),
      std::string::npos);
  EXPECT_NE(config_error([] { parse::bytes("0", "X", 1); }).find("out of range"),
            std::string::npos);
}

TEST(ParseBytes, RefusesWhatIsNotASize) {
  for (const char* bad : {"", "K", "-1", "1.5M", "12Q", "1 M M"})
    EXPECT_NE(config_error([&] { parse::bytes(bad, "X"); }).find("is not a byte size"),
              std::string::npos)
        << bad;
}

TEST(ParseSeconds, AcceptsUnits) {
  EXPECT_DOUBLE_EQ(parse::seconds("30", "X"), 30.0);
  EXPECT_DOUBLE_EQ(parse::seconds("2.5s", "X"), 2.5);
  EXPECT_DOUBLE_EQ(parse::seconds("500ms", "X"), 0.5);
  EXPECT_DOUBLE_EQ(parse::seconds("5m", "X"), 300.0);
}

TEST(ParseSeconds, RefusesInfiniteNegativeAndHuge) {
  for (const char* bad : {"inf", "nan", "-1", "1e400", "", "s", "5h", "0x10"})
    EXPECT_NE(config_error([&] { parse::seconds(bad, "X"); }), "") << bad;
  EXPECT_NE(config_error([] {
              parse::seconds("2000000", "TUTTI_TIMEOUT");
            }).find("between 0 s and 1000000 s"),
            std::string::npos);
  EXPECT_NE(config_error([] { parse::seconds("0", "X", 0.001); }).find("is refused"),
            std::string::npos);
}

// A deadline of zero never means "no limit" and is not taken as "fail at once" either.
TEST(ParseSeconds, ZeroDeadlineIsRefusedWithAHint) {
  std::string m = config_error([] { parse::seconds("0", "TUTTI_TIMEOUT", 0.001, 100); });
  EXPECT_NE(m.find("TUTTI_TIMEOUT='0'"), std::string::npos) << m;
  EXPECT_NE(m.find("86400"), std::string::npos) << m;
  m = config_error([] { parse::seconds("0ms", "--timeout", 0.001, 100); });
  EXPECT_NE(m.find("86400"), std::string::npos) << m;
  // Where zero is allowed it is just zero.
  EXPECT_EQ(parse::seconds("0", "--grace", 0, 100), 0.0);
}

}  // namespace
}  // namespace tutti
