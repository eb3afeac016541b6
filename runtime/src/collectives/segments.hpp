// A fused allreduce's buffers: several (send, recv, count) tensors reduced as one logical vector,
// in order. Algorithms that can read and write them in place (the shared-memory window) do so;
// the others get them packed into one buffer and unpacked afterwards.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace tutti::collectives {

struct Segment {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements
};

class SegmentView {
 public:
  SegmentView(std::span<const Segment> segments, size_t element_bytes)
      : segments_(segments), es_(element_bytes) {
    starts_.reserve(segments.size() + 1);
    size_t at = 0;
    for (const Segment& s : segments) {
      starts_.push_back(at);
      at += s.count;
    }
    starts_.push_back(at);
  }
  size_t count() const { return starts_.back(); }

  // Calls fn(in, out, at, n) for each contiguous piece of elements [first, first + n) of the
  // logical vector: `in`/`out` point at the piece in its tensor's send/recv, `at` is the piece's
  // offset from `first`.
  template <typename Fn>
  void pieces(size_t first, size_t n, Fn&& fn) const {
    if (n == 0) return;
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), first) -
                                   starts_.begin()) -
               1;
    size_t done = 0;
    while (done < n) {
      const Segment& s = segments_[i];
      const size_t inside = first + done - starts_[i];
      const size_t len = std::min(s.count - inside, n - done);
      if (len > 0)
        fn(static_cast<const std::byte*>(s.send) + inside * es_,
           static_cast<std::byte*>(s.recv) + inside * es_, done, len);
      done += len;
      ++i;
    }
  }

 private:
  std::span<const Segment> segments_;
  size_t es_;
  std::vector<size_t> starts_;
};

}  // namespace tutti::collectives
