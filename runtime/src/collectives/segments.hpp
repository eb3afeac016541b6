// A fused allreduce's buffers: several (send, recv, count) tensors reduced as one logical vector,
// in order. Algorithms that can read and write them in place (the shared-memory window, and the
// ring and hierarchical algorithms over channels that take pieces) do so; the others get them
// packed into one buffer and unpacked afterwards.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tutti::collectives {

struct Segment {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements
};

// Whether the tensors' buffers are apart: no tensor's recv overlaps another tensor's send or recv,
// nor its own send unless exactly (in place). Only then may an algorithm write results into the
// tensors while it still reads their inputs. The same buffer enqueued under two names, or one
// tensor's output given as another's input, must be packed instead (read whole before anything
// is written), which gives every tensor the result of its own input, as separate calls would in
// order. Sends that overlap each other count too (rare; packing is merely slower there).
inline bool tensors_apart(std::span<const Segment> segments, size_t element_bytes) {
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [begin, end) of every buffer
  spans.reserve(2 * segments.size());
  for (const Segment& s : segments) {
    if (s.count == 0) continue;
    const size_t bytes = s.count * element_bytes;
    const auto recv = reinterpret_cast<uintptr_t>(s.recv);
    spans.emplace_back(recv, recv + bytes);
    if (s.send != s.recv) {
      const auto send = reinterpret_cast<uintptr_t>(s.send);
      spans.emplace_back(send, send + bytes);
    }
  }
  // A training step's tensors usually come in address order or its reverse (the backward pass):
  // then a pass, not a sort, orders them, on every step.
  if (std::is_sorted(spans.rbegin(), spans.rend()))
    std::reverse(spans.begin(), spans.end());
  else if (!std::is_sorted(spans.begin(), spans.end()))
    std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second) return false;
  return true;
}

// The same logical vector in fewer segments: each tensor that continues the one before it in
// memory (its send right after the previous send, its recv right after the previous recv) is
// merged into it. Only that order keeps the logical vector, and so what every rank agreed on,
// whatever another rank's buffers look like. Views into one flat buffer, enqueued in its order,
// become one segment: a message of the ring is then one piece, not one per tensor.
inline std::vector<Segment> coalesced(std::span<const Segment> segments, size_t element_bytes) {
  std::vector<Segment> out;
  out.reserve(segments.size());
  for (const Segment& s : segments) {
    if (s.count == 0) continue;
    if (!out.empty()) {
      Segment& last = out.back();
      const size_t bytes = last.count * element_bytes;
      if (static_cast<const std::byte*>(last.send) + bytes == s.send &&
          static_cast<std::byte*>(last.recv) + bytes == s.recv) {
        last.count += s.count;
        continue;
      }
    }
    out.push_back(s);
  }
  return out;
}

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
