// The trainer's checkpoint files: whole or refused with a reason, and the fall back to PATH.prev.
#include "checkpoint_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tutti/error.hpp"

namespace fs = std::filesystem;
using fashion_mnist::load_newest_checkpoint;
using fashion_mnist::read_checkpoint_file;
using fashion_mnist::write_checkpoint_file;

namespace {

class CheckpointFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tutti_ckpt_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "model.ckpt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string error_of(const std::string& path) {
    try {
      read_checkpoint_file(path);
    } catch (const tutti::Error& e) {
      return e.what();
    }
    return "";
  }
  void truncate_to(const std::string& path, size_t size) { fs::resize_file(path, size); }

  fs::path dir_;
  std::string path_;
};

TEST_F(CheckpointFile, RoundTripsAndKeepsThePreviousOne) {
  write_checkpoint_file(path_, "first");
  write_checkpoint_file(path_, std::string(100000, 'x'));
  EXPECT_EQ(read_checkpoint_file(path_), std::string(100000, 'x'));
  EXPECT_EQ(read_checkpoint_file(path_ + ".prev"), "first");
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

TEST_F(CheckpointFile, TruncatedGarbageAndFlippedBytesAreRefusedWithTheReason) {
  write_checkpoint_file(path_, std::string(1000, 'a'));
  truncate_to(path_, 500);
  EXPECT_NE(error_of(path_).find("truncated checkpoint (476 payload bytes of 1000)"),
            std::string::npos)
      << error_of(path_);
  truncate_to(path_, 10);
  EXPECT_NE(error_of(path_).find("not a tutti checkpoint"), std::string::npos);
  std::ofstream(path_) << "garbage garbage garbage garbage";
  EXPECT_NE(error_of(path_).find("not a tutti checkpoint"), std::string::npos);
  write_checkpoint_file(path_, std::string(1000, 'a'));
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(600);
    f.put('b');
  }
  EXPECT_NE(error_of(path_).find("CRC-32 mismatch"), std::string::npos) << error_of(path_);
  EXPECT_NE(error_of(path_ + ".missing").find("cannot be opened"), std::string::npos);
}

TEST_F(CheckpointFile, LoadFallsBackToThePreviousOneAndSaysSo) {
  std::vector<std::string> notes;
  const auto note = [&](const std::string& n) { notes.push_back(n); };
  std::string got;
  const auto use = [&](const std::string& payload) { got = payload; };
  EXPECT_EQ(load_newest_checkpoint(path_, use, note), std::nullopt);  // nothing yet: fresh start

  write_checkpoint_file(path_, "old");
  write_checkpoint_file(path_, "new");
  EXPECT_EQ(load_newest_checkpoint(path_, use, note), path_);
  EXPECT_EQ(got, "new");

  truncate_to(path_, 26);
  EXPECT_EQ(load_newest_checkpoint(path_, use, note), path_ + ".prev");
  EXPECT_EQ(got, "old");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("is unusable"), std::string::npos);
  EXPECT_NE(notes[0].find("trying the previous one"), std::string::npos);

  // A payload the parser refuses counts as unusable too.
  write_checkpoint_file(path_, "good");
  write_checkpoint_file(path_, "unparsable");
  const auto picky = [&](const std::string& p) {
    if (p == "unparsable") throw tutti::Error(tutti::ErrorCode::kInvalidArgument, "bad archive");
    got = p;
  };
  EXPECT_EQ(load_newest_checkpoint(path_, picky, note), path_ + ".prev");
  EXPECT_EQ(got, "good");  // .prev is now the former PATH

  std::ofstream(path_ + ".prev") << "garbage";
  try {
    load_newest_checkpoint(path_, picky, note);
    ADD_FAILURE() << "no error with two unusable files";
  } catch (const tutti::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no usable checkpoint"), std::string::npos) << e.what();
  }
}

}  // namespace
