#include "launcher/output_mux.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"

namespace tutti::launcher {

void LineSplitter::feed(std::string_view bytes, std::string& out) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(bytes);
      while (partial_.size() >= max_line_) {
        out.append(prefix_).append(partial_, 0, max_line_).push_back('\n');
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
  out.append(prefix_).append(partial_).push_back('\n');
  partial_.clear();
}

std::string tag_prefix(int rank, bool tag_output) {
  return tag_output ? fmt::format("[{}] ", rank) : "";
}

void OutputMux::add(int rank, Stream stream, UniqueFd fd) {
  if (!fd.valid()) return;
  sources_.push_back(std::make_unique<Source>(
      Source{rank, stream, std::move(fd), LineSplitter(tag_prefix(rank, tag_output_))}));
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
  scratch_.clear();
  s.lines.feed(std::string_view(buffer_.data(), static_cast<size_t>(n)), scratch_);
  if (!scratch_.empty()) sink_.write(s.stream, scratch_);
  return true;
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
    throw_system_error("tuttirun: poll on the ranks' output pipes", errno);
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
