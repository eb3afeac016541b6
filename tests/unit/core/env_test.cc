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
  }
};

TEST_F(EnvTest, DefaultsApplyWhenUnset) {
  unsetenv("TUTTI_TIMEOUT");
  EXPECT_DOUBLE_EQ(env::get_seconds("TUTTI_TIMEOUT"), 60.0);
  EXPECT_EQ(env::get_choice("TUTTI_ALGO"), "auto");
  EXPECT_FALSE(env::is_set("TUTTI_RANK"));
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

TEST_F(EnvTest, UnregisteredNameIsABug) {
  try {
    env::raw("TUTTI_NOT_A_THING");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

// The README's env table is generated from the registry; this keeps the two from drifting apart.
TEST_F(EnvTest, ReadmeTableMatchesRegistry) {
  std::ifstream readme(TUTTI_SOURCE_DIR "/README.md");
  ASSERT_TRUE(readme.good()) << "README.md not found";
  std::stringstream text;
  text << readme.rdbuf();
  EXPECT_NE(text.str().find(env::markdown_table()), std::string::npos)
      << "README.md's env table is out of date; paste this:\n"
      << env::markdown_table();
}

}  // namespace
}  // namespace tutti
