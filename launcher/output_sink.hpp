// Where the multiplexed output goes. The supervisor's own messages go through the same sink, so
// they never land in the middle of a rank's line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tutti::launcher {

enum class Stream { kStdout, kStderr };

class OutputSink {
 public:
  virtual ~OutputSink() = default;
  // Writes whole lines; each call's bytes appear contiguously.
  virtual void write(Stream stream, std::string_view bytes) = 0;
};

// tuttirun's own stdout/stderr. A reader that went away (EPIPE) silences that stream instead of
// killing tuttirun, which must stay alive to stop the job cleanly.
class FdSink : public OutputSink {
 public:
  FdSink(int stdout_fd, int stderr_fd) : fds_{stdout_fd, stderr_fd} {}
  void write(Stream stream, std::string_view bytes) override;

 private:
  int fds_[2];
  bool broken_[2] = {false, false};
};

// Keeps everything in memory; for tests.
class MemorySink : public OutputSink {
 public:
  void write(Stream stream, std::string_view bytes) override {
    (stream == Stream::kStdout ? out : err).append(bytes);
    ++writes;
  }
  std::string out;
  std::string err;
  size_t writes = 0;
};

}  // namespace tutti::launcher
