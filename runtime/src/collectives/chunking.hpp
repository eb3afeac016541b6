// How a buffer is cut into per-rank chunks and each chunk into pipeline segments. Every rank
// computes the same cuts from (count, parts, segment size) alone, so no sizes go over the wire and
// empty chunks (count < parts) are simply skipped by both sides.
#pragma once

#include <algorithm>
#include <cstddef>

namespace tutti::collectives {

// `count` elements cut into `parts` chunks whose sizes differ by at most one, larger ones first.
class Split {
 public:
  Split(size_t count, size_t parts) : base_(count / parts), extra_(count % parts) {}

  size_t begin(size_t part) const { return part * base_ + std::min(part, extra_); }
  size_t size(size_t part) const { return base_ + (part < extra_ ? 1 : 0); }

 private:
  size_t base_;
  size_t extra_;
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
