#include "launcher/output_mux.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <sstream>

#include "launcher/pipe.hpp"

namespace tutti::launcher {
namespace {

class SplitterChunks : public ::testing::TestWithParam<size_t> {};

// However the bytes are cut into reads, the tagged lines come out the same.
TEST_P(SplitterChunks, SameLinesForEveryChunking) {
  const std::string input = "alpha\nbeta gamma\n\nlast without newline";
  LineSplitter lines("[3] ");
  std::string out;
  for (size_t i = 0; i < input.size(); i += GetParam())
    lines.feed(std::string_view(input).substr(i, GetParam()), out);
  EXPECT_EQ(out, "[3] alpha\n[3] beta gamma\n[3] \n");
  EXPECT_TRUE(lines.has_partial());
  lines.finish(out);
  EXPECT_EQ(out, "[3] alpha\n[3] beta gamma\n[3] \n[3] last without newline\n");
  EXPECT_FALSE(lines.has_partial());
  lines.finish(out);  // nothing pending: no extra empty line
  EXPECT_EQ(out, "[3] alpha\n[3] beta gamma\n[3] \n[3] last without newline\n");
}

INSTANTIATE_TEST_SUITE_P(Sizes, SplitterChunks, ::testing::Values(1, 2, 3, 5, 7, 64, 4096));

TEST(LineSplitter, OverlongLinesAreCut) {
  LineSplitter lines("[0] ", 4);
  std::string out;
  lines.feed("abcdefghij", out);
  EXPECT_EQ(out, "[0] abcd\n[0] efgh\n");
  lines.feed("k\n", out);
  EXPECT_EQ(out, "[0] abcd\n[0] efgh\n[0] ijk\n");
}

// A line of exactly max_line bytes whose newline comes in a later read stays whole (a 1 MiB line
// used to gain a newline and a second tag).
TEST(LineSplitter, ALineOfExactlyTheBoundStaysWhole) {
  LineSplitter lines("[0] ", 4);
  std::string out;
  lines.feed("abcd", out);
  EXPECT_EQ(out, "");
  lines.feed("\nefgh", out);
  lines.feed("ijkl", out);  // now longer than the bound with no newline: cut
  lines.feed("\n", out);
  EXPECT_EQ(out, "[0] abcd\n[0] efgh\n[0] ijkl\n");
}

// --no-tag-output: exactly the rank's bytes; a newline was once added to a last line without one,
// and to every cut of an overlong line.
TEST(LineSplitter, UntaggedOutputIsTheRanksOwnBytes) {
  LineSplitter lines("", 4);
  std::string out;
  lines.feed("abcdefghij", out);
  lines.feed("k\nxyz", out);
  lines.finish(out);
  EXPECT_EQ(out, "abcdefghijk\nxyz");
}

TEST(LineSplitter, Prefixes) {
  EXPECT_EQ(tag_prefix(12, true), "[12] ");
  EXPECT_EQ(tag_prefix(12, false), "");
}

struct Writer {
  Pipe pipe = make_pipe(true);
  void write(const std::string& s) {
    ASSERT_EQ(::write(pipe.write_end.get(), s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  void close() { pipe.write_end.reset(); }
};

class MuxRanks : public ::testing::TestWithParam<bool> {};

TEST_P(MuxRanks, EveryLineArrivesWholeAndTagged) {
  const bool tag = GetParam();
  const int kRanks = 4;
  MemorySink sink;
  OutputMux mux(sink, tag);
  std::vector<Writer> out(kRanks), err(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    mux.add(r, Stream::kStdout, std::move(out[r].pipe.read_end));
    mux.add(r, Stream::kStderr, std::move(err[r].pipe.read_end));
  }
  EXPECT_EQ(mux.open_streams(), 2u * kRanks);
  // Interleave half-lines of different ranks; the mux must still emit whole lines.
  for (int i = 0; i < 50; ++i) {
    for (int r = 0; r < kRanks; ++r) out[r].write("rank" + std::to_string(r) + " line");
    for (int r = 0; r < kRanks; ++r) out[r].write(" " + std::to_string(i) + "\n");
    while (mux.poll_once(0)) {
    }
    mux.poll_once(0);
  }
  for (int r = 0; r < kRanks; ++r) {
    err[r].write("oops " + std::to_string(r));  // no newline: completed at EOF when tagged
    out[r].close();
    err[r].close();
  }
  EXPECT_EQ(mux.drain(Deadline::after_seconds(10)), 0u);
  EXPECT_EQ(mux.open_streams(), 0u);

  std::map<int, int> next;  // per rank, the next expected line number
  std::istringstream lines(sink.out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    int r = -1, i = -1;
    if (tag) {
      ASSERT_EQ(std::sscanf(line.c_str(), "[%d] rank%*d line %d", &r, &i), 2) << line;
      EXPECT_EQ(line.substr(line.find(']') + 2, 5), "rank" + std::to_string(r)) << line;
    } else {
      ASSERT_EQ(std::sscanf(line.c_str(), "rank%d line %d", &r, &i), 2) << line;
    }
    EXPECT_EQ(i, next[r]++) << "rank " << r << " out of order: " << line;
    ++count;
  }
  EXPECT_EQ(count, 50 * kRanks);
  for (int r = 0; r < kRanks; ++r) {
    // Untagged output is the rank's bytes: no newline is made up.
    std::string expected = tag_prefix(r, tag) + "oops " + std::to_string(r) + (tag ? "\n" : "");
    EXPECT_NE(sink.err.find(expected), std::string::npos) << sink.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Tagging, MuxRanks, ::testing::Bool());

TEST(OutputMux, DrainCutsStreamsThatStayOpen) {
  MemorySink sink;
  OutputMux mux(sink, true);
  Writer w;
  mux.add(0, Stream::kStdout, std::move(w.pipe.read_end));
  w.write("partial");
  EXPECT_EQ(mux.drain(Deadline::after_seconds(0.05)), 1u);
  EXPECT_EQ(sink.out, "[0] partial\n");
}

TEST(OutputMux, FlushRankForwardsOnlyThatRank) {
  MemorySink sink;
  OutputMux mux(sink, true);
  Writer a, b;
  mux.add(0, Stream::kStdout, std::move(a.pipe.read_end));
  mux.add(1, Stream::kStdout, std::move(b.pipe.read_end));
  a.write("zero\n");
  b.write("one\n");
  b.close();
  mux.flush_rank(1);
  EXPECT_EQ(sink.out, "[1] one\n");
  EXPECT_EQ(mux.open_streams(), 1u);
}

TEST(OutputMux, WakeFdIsReported) {
  MemorySink sink;
  OutputMux mux(sink, true);
  Writer data, wake;
  mux.add(0, Stream::kStdout, std::move(data.pipe.read_end));
  EXPECT_FALSE(mux.poll_once(0, wake.pipe.read_end.get()));
  wake.write("x");
  EXPECT_TRUE(mux.poll_once(1000, wake.pipe.read_end.get()));
}

}  // namespace
}  // namespace tutti::launcher
