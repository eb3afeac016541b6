#include "launcher/output_mux.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace tutti::launcher {

void LineSplitter::feed(std::string_view bytes, std::string& out) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(bytes);
      // Only a line longer than max_line is cut: one of exactly max_line bytes whose newline comes
      // in the next read stays whole (a 1 MiB line used to gain a newline and a second tag).
      while (partial_.size() > max_line_) {
        out.append(prefix_).append(partial_, 0, max_line_);
        // Tagged output is cut into lines so every piece carries its tag; untagged output stays
        // the rank's own bytes.
        if (!prefix_.empty()) out.push_back('\n');
        partial_.erase(0, max_line_);
      }
      return;
    }
    out.append(prefix_).append(partial_).append(bytes.substr(0, nl + 1));
    partial_.clear();
    bytes.remove_prefix(nl + 1);
  }
}

void LineSplitter::finish(std::string& out) {
  if (partial_.empty()) return;
  out.append(prefix_).append(partial_);
  if (!prefix_.empty()) out.push_back('\n');  // untagged: exactly what the rank wrote
  partial_.clear();
}

std::string tag_prefix(int rank, bool tag_output) {
  return tag_output ? fmt::format("[{}] ", rank) : "";
}

namespace {

net::Fd open_copy_file(const std::string& dir, int rank, Stream stream) {
  std::string rank_dir = fmt::format("{}/rank.{}", dir, rank);
  for (const std::string& d : {dir, rank_dir})
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
      throw_system_error(fmt::format("--output-dir: cannot create {}", d), errno);
  std::string path = rank_dir + (stream == Stream::kStdout ? "/stdout" : "/stderr");
  net::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) throw_system_error(fmt::format("--output-dir: cannot write {}", path), errno);
  return fd;
}

}  // namespace

void OutputMux::add(int rank, Stream stream, net::Fd fd) {
  if (!fd.valid()) return;
  net::Fd copy;
  if (!copy_dir_.empty()) copy = open_copy_file(copy_dir_, rank, stream);
  sources_.push_back(std::make_unique<Source>(Source{
      rank, stream, std::move(fd), LineSplitter(tag_prefix(rank, tag_output_)), std::move(copy)}));
}

size_t OutputMux::open_streams() const {
  size_t n = 0;
  for (const auto& s : sources_) n += s->fd.valid() ? 1 : 0;
  return n;
}

void OutputMux::close_source(Source& s) {
  scratch_.clear();
  s.lines.finish(scratch_);
  if (!scratch_.empty()) sink_.write(s.stream, scratch_);
  s.fd.reset();
}

bool OutputMux::read_from(Source& s) {
  ssize_t n = ::read(s.fd.get(), buffer_.data(), buffer_.size());
  if (n < 0 && errno == EINTR) return true;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (n <= 0) {
    close_source(s);
    return false;
  }
  if (s.copy.valid()) write_copy(s, static_cast<size_t>(n));
  scratch_.clear();
  s.lines.feed(std::string_view(buffer_.data(), static_cast<size_t>(n)), scratch_);
  if (!scratch_.empty()) sink_.write(s.stream, scratch_);
  return true;
}

void OutputMux::write_copy(Source& s, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(s.copy.get(), buffer_.data() + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      // A full disk must not stop the job; the terminal still gets everything.
      sink_.write(Stream::kStderr,
                  fmt::format("tuttirun: --output-dir: writing rank {}'s {} failed ({}); no "
                              "longer copying it\n",
                              s.rank, s.stream == Stream::kStdout ? "stdout" : "stderr",
                              std::strerror(errno)));
      s.copy.reset();
      return;
    }
    done += static_cast<size_t>(w);
  }
}

void OutputMux::flush_rank(int rank) {
  for (auto& s : sources_) {
    if (s->rank != rank) continue;
    while (s->fd.valid() && read_from(*s)) {
    }
  }
}

bool OutputMux::poll_once(int timeout_ms, int wake_fd) {
  std::vector<pollfd> fds;
  std::vector<Source*> polled;
  fds.reserve(sources_.size() + 1);
  for (auto& s : sources_) {
    if (!s->fd.valid()) continue;
    fds.push_back(pollfd{s->fd.get(), POLLIN, 0});
    polled.push_back(s.get());
  }
  if (wake_fd >= 0) fds.push_back(pollfd{wake_fd, POLLIN, 0});
  if (fds.empty()) return false;
  int r = ::poll(fds.data(), fds.size(), timeout_ms);
  if (r < 0) {
    if (errno == EINTR) return false;
    throw_system_error("poll on the ranks' output pipes", errno);
  }
  for (size_t i = 0; i < polled.size(); ++i)
    if (fds[i].revents != 0) read_from(*polled[i]);
  return wake_fd >= 0 && fds.back().revents != 0;
}

size_t OutputMux::drain(Deadline deadline) {
  while (open_streams() > 0 && !deadline.expired()) poll_once(deadline.remaining_ms(100));
  size_t cut = 0;
  for (auto& s : sources_) {
    if (!s->fd.valid()) continue;
    ++cut;
    close_source(*s);
  }
  return cut;
}

}  // namespace tutti::launcher
