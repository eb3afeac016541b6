// How a buffer is cut into per-rank chunks and each chunk into pipeline segments. Every rank
// computes the same cuts from (count, parts, segment size) alone, so no sizes go over the wire and
// empty chunks (count < parts) are simply skipped by both sides.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace tutti::collectives {

// `count` elements cut into `parts` chunks whose sizes differ by at most one, larger ones first;
// or, for the v-collectives, into chunks of the callers' per-rank counts, back to back.
class Split {
 public:
  Split(size_t count, size_t parts) : base_(count / parts), extra_(count % parts) {}
  // Chunk r has counts[r] elements; every rank passes the same counts.
  static Split of_counts(std::span<const size_t> counts) {
    Split s(0, 1);
    s.offsets_.reserve(counts.size() + 1);
    size_t at = 0;
    for (size_t c : counts) {
      s.offsets_.push_back(at);
      at += c;
    }
    s.offsets_.push_back(at);
    return s;
  }

  size_t begin(size_t part) const {
    return offsets_.empty() ? part * base_ + std::min(part, extra_) : offsets_[part];
  }
  size_t size(size_t part) const {
    return offsets_.empty() ? base_ + (part < extra_ ? 1 : 0) : offsets_[part + 1] - offsets_[part];
  }

 private:
  size_t base_;
  size_t extra_;
  std::vector<size_t> offsets_;  // of_counts: chunk r is [offsets_[r], offsets_[r + 1])
};

// Elements per pipeline segment: segment_bytes rounded down to whole elements, at least one.
inline size_t segment_elements(size_t segment_bytes, size_t element_bytes) {
  return std::max<size_t>(1, segment_bytes / element_bytes);
}

inline size_t segment_count(size_t elements, size_t per_segment) {
  return (elements + per_segment - 1) / per_segment;
}

// Positive modulo for ring arithmetic on ranks and chunk numbers.
inline int wrap(int value, int size) {
  return ((value % size) + size) % size;
}

}  // namespace tutti::collectives
