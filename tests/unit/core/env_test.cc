#include "core/env.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace tutti {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_SEGMENT_BYTES");
    unsetenv("TUTTI_ALGO");
    unsetenv("TUTTI_RANK");
    unsetenv("TUTTI_COLLECTIVE_TIMEOUT");
    unsetenv("TUTTI_SHM_RING_BYTES");
    unsetenv("TUTTI_TCP_BUFFER_BYTES");
    unsetenv("TUTTI_TCP_STREAMS");
    unsetenv("TUTTI_LOG_LEVEL");
  }
};

TEST_F(EnvTest, DefaultsApplyWhenUnset) {
  unsetenv("TUTTI_TIMEOUT");
  EXPECT_DOUBLE_EQ(env::get_seconds("TUTTI_TIMEOUT"), 60.0);
  EXPECT_EQ(env::get_choice("TUTTI_ALGO"), "auto");
  EXPECT_FALSE(env::is_set("TUTTI_RANK"));
}

// The one "empty means unset" read, for every variable, registered or not.
TEST_F(EnvTest, ProcessValueTreatsEmptyAsUnset) {
  const char* name = "TUTTI_ENV_TEST_NOT_REGISTERED";
  unsetenv(name);
  EXPECT_EQ(env::process_value(name), std::nullopt);
  setenv(name, "", 1);
  EXPECT_EQ(env::process_value(name), std::nullopt);
  setenv(name, " x=y ", 1);
  EXPECT_EQ(env::process_value(name), " x=y ");  // as set: no trimming
  unsetenv(name);
  // raw() reads the same way but only registered names: another one is a bug in tutti.
  setenv("TUTTI_RANK", "", 1);
  EXPECT_EQ(env::raw("TUTTI_RANK"), std::nullopt);
  setenv("TUTTI_RANK", "3", 1);
  EXPECT_EQ(env::raw("TUTTI_RANK"), "3");
  try {
    env::raw(name);
    FAIL() << "an unregistered name was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

TEST_F(EnvTest, ParsesTypedValues) {
  setenv("TUTTI_TIMEOUT", "500ms", 1);
  EXPECT_DOUBLE_EQ(env::get_seconds("TUTTI_TIMEOUT"), 0.5);
  setenv("TUTTI_TIMEOUT", "2m", 1);
  EXPECT_DOUBLE_EQ(env::get_seconds("TUTTI_TIMEOUT"), 120.0);
  setenv("TUTTI_SEGMENT_BYTES", "64K", 1);
  EXPECT_EQ(env::get_bytes("TUTTI_SEGMENT_BYTES"), 65536u);
  setenv("TUTTI_SEGMENT_BYTES", "2MiB", 1);
  EXPECT_EQ(env::get_bytes("TUTTI_SEGMENT_BYTES"), 2u << 20);
  setenv("TUTTI_ALGO", "RING", 1);
  EXPECT_EQ(env::get_choice("TUTTI_ALGO"), "ring");
  setenv("TUTTI_RANK", "7", 1);
  EXPECT_EQ(env::get_int("TUTTI_RANK"), 7);
}

TEST_F(EnvTest, BadValuesNameTheVariable) {
  setenv("TUTTI_RANK", "seven", 1);
  try {
    env::get_int("TUTTI_RANK");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("TUTTI_RANK"), std::string::npos);
  }
  setenv("TUTTI_ALGO", "bubble", 1);
  EXPECT_THROW(env::get_choice("TUTTI_ALGO"), Error);
  setenv("TUTTI_SEGMENT_BYTES", "12Q", 1);
  EXPECT_THROW(env::get_bytes("TUTTI_SEGMENT_BYTES"), Error);
  setenv("TUTTI_TIMEOUT", "-3", 1);
  EXPECT_THROW(env::get_seconds("TUTTI_TIMEOUT"), Error);
}

// The kConfig message of reading `name` set to `value`, or "" when it was accepted.
std::string refusal(const char* name, const char* value) {
  setenv(name, value, 1);
  try {
    env::check_all();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig) << e.what();
    unsetenv(name);
    return e.what();
  }
  unsetenv(name);
  return "";
}

TEST_F(EnvTest, NumbersOutsideTheirRangeAreRefusedNamingVariableAndRange) {
  EXPECT_NE(refusal("TUTTI_SEGMENT_BYTES", "99999999999999")
                .find("TUTTI_SEGMENT_BYTES='99999999999999' is out of range: it must be between 1 "
                      "and 1073741824"),
            std::string::npos);
  EXPECT_NE(refusal("TUTTI_SEGMENT_BYTES", "0").find("TUTTI_SEGMENT_BYTES='0' is out of range"),
            std::string::npos);
  EXPECT_NE(refusal("TUTTI_SHM_RING_BYTES", "2T").find("TUTTI_SHM_RING_BYTES"), std::string::npos);
  EXPECT_NE(refusal("TUTTI_TCP_BUFFER_BYTES", "4G").find("TUTTI_TCP_BUFFER_BYTES"),
            std::string::npos);
  EXPECT_NE(refusal("TUTTI_TCP_STREAMS", "17").find("between 1 and 16"), std::string::npos);
  EXPECT_NE(refusal("TUTTI_RANK", "4294967296").find("between 0 and 1048575"), std::string::npos);
}

TEST_F(EnvTest, ZeroTimeoutsAreRefusedWithAHint) {
  for (const char* name : {"TUTTI_TIMEOUT", "TUTTI_COLLECTIVE_TIMEOUT"}) {
    std::string m = refusal(name, "0");
    EXPECT_NE(m.find(name), std::string::npos) << m;
    EXPECT_NE(m.find("pass a large value such as 86400"), std::string::npos) << m;
  }
  setenv("TUTTI_TIMEOUT", "86400", 1);
  EXPECT_DOUBLE_EQ(env::get_seconds("TUTTI_TIMEOUT"), 86400.0);
}

TEST_F(EnvTest, ABadLogLevelIsAnErrorNamingTheChoices) {
  std::string m = refusal("TUTTI_LOG_LEVEL", "verbose");
  EXPECT_NE(m.find("TUTTI_LOG_LEVEL='verbose' is not one of error|warn|info|debug|trace"),
            std::string::npos)
      << m;
}

// Every numeric variable has a range that holds its default, so the docs can state it and
// no reader can get an unchecked number.
TEST_F(EnvTest, EveryNumericVariableHasARangeHoldingItsDefault) {
  for (const auto& v : env::all()) {
    if (v.kind != env::Kind::kInt && v.kind != env::Kind::kBytes && v.kind != env::Kind::kSeconds)
      continue;
    EXPECT_LT(v.min, v.max) << v.name;
    if (!v.default_value.empty() && !env::is_set(v.name)) {
      EXPECT_NO_THROW(env::check_all()) << v.name;
      switch (v.kind) {
        case env::Kind::kInt:
          EXPECT_NO_THROW(env::get_int(v.name)) << v.name;
          break;
        case env::Kind::kBytes:
          EXPECT_NO_THROW(env::get_bytes(v.name)) << v.name;
          break;
        default:
          EXPECT_NO_THROW(env::get_seconds(v.name)) << v.name;
          break;
      }
    }
  }
  EXPECT_NE(env::markdown_table().find("| `TUTTI_SEGMENT_BYTES` | bytes | `256K` | 1–1G |"),
            std::string::npos)
      << env::markdown_table();
}

TEST_F(EnvTest, UnregisteredNameIsABug) {
  try {
    env::raw("TUTTI_NOT_A_THING");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

// docs/ENVIRONMENT.md's table is generated from the registry; this keeps the two from drifting
// apart.
TEST_F(EnvTest, ReadmeTableMatchesRegistry) {
  std::ifstream readme(TUTTI_SOURCE_DIR "/docs/ENVIRONMENT.md");
  ASSERT_TRUE(readme.good()) << "docs/ENVIRONMENT.md not found";
  std::stringstream text;
  text << readme.rdbuf();
  EXPECT_NE(text.str().find(env::markdown_table()), std::string::npos)
      << "docs/ENVIRONMENT.md's env table is out of date; paste this:\n"
      << env::markdown_table();
}

}  // namespace
}  // namespace tutti
