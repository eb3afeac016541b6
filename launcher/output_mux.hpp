// The output multiplexer: one poll loop over every rank's stdout and stderr pipe. Complete lines go
// to the sink, prefixed "[rank] " when tagging is on; a partial last line is completed at EOF. One
// read's worth of lines is written at once, so lines of different ranks never mix mid-line.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/deadline.hpp"
#include "launcher/output_sink.hpp"
#include "net/fd.hpp"

namespace tutti::launcher {

// Splits one stream's bytes into lines, each prefixed. A line of up to max_line bytes (1 MiB) stays
// whole; a longer one is cut into max_line pieces, each with its prefix (and, tagged, its own
// newline), so that a rank printing without newlines cannot make tuttirun grow without bound.
class LineSplitter {
 public:
  explicit LineSplitter(std::string prefix, size_t max_line = 1 << 20)
      : prefix_(std::move(prefix)), max_line_(max_line) {}
  // Appends every completed line (prefix + line + '\n') to out. A line longer than max_line is cut,
  // each piece newline-terminated when there is a prefix.
  void feed(std::string_view bytes, std::string& out);
  // Appends the pending partial line, if any: newline-terminated when there is a prefix, as the
  // rank wrote it (no newline added) when there is none.
  void finish(std::string& out);
  bool has_partial() const { return !partial_.empty(); }

 private:
  std::string prefix_;
  std::string partial_;
  size_t max_line_;
};

std::string tag_prefix(int rank, bool tag_output);  // "[3] " or ""

class OutputMux {
 public:
  OutputMux(OutputSink& sink, bool tag_output) : sink_(sink), tag_output_(tag_output) {}

  // Every stream added from now on is also copied, byte for byte and untagged, to
  // DIR/rank.N/stdout or DIR/rank.N/stderr (created, truncated). Throws kConfig naming a path that
  // cannot be created.
  void copy_to_directory(std::string dir) { copy_dir_ = std::move(dir); }

  // Takes ownership of a non-blocking read end.
  void add(int rank, Stream stream, net::Fd fd);

  // Waits up to timeout_ms for output (or for wake_fd, when >= 0, to become readable) and forwards
  // what arrived. Returns true when wake_fd is readable.
  bool poll_once(int timeout_ms, int wake_fd = -1);

  // Forwards output until every stream is at EOF or the deadline passes; then completes and closes
  // whatever is still open. Returns the number of streams that were cut off by the deadline.
  size_t drain(Deadline deadline);

  // Forwards everything already written by `rank` without waiting (used when it exited, so its last
  // words come before tuttirun's message about it). Streams at EOF are closed.
  void flush_rank(int rank);

  size_t open_streams() const;
  OutputSink& sink() { return sink_; }

 private:
  struct Source {
    int rank;
    Stream stream;
    net::Fd fd;
    LineSplitter lines;
    net::Fd copy;  // the --output-dir file, when there is one
  };
  // Reads once from s; on EOF or error completes its last line and closes it. Returns false when
  // nothing more can be read now.
  bool read_from(Source& s);
  void close_source(Source& s);
  void write_copy(Source& s, size_t n);

  OutputSink& sink_;
  bool tag_output_;
  std::string copy_dir_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::string scratch_;
  std::vector<char> buffer_ = std::vector<char>(64 * 1024);
};

}  // namespace tutti::launcher
