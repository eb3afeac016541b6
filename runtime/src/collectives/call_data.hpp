// The bytes one call moves, as the hierarchical allreduce and broadcast see them: one flat buffer
// pair, or the tensors of a fused batch where they lie. Ranges are bytes of the logical vector
// (the tensors' concatenation). A flat range goes out as one plain message, a batch's as one
// message of pieces (the channel gathers and scatters); both match a plain message of the same
// bytes on the other side, so a rank that packs its batch still meets one that does not.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "collectives/segments.hpp"
#include "transport/channel.hpp"

namespace tutti::collectives {

class CallData {
 public:
  // One buffer pair of `bytes` (send may equal recv).
  CallData(const void* send, void* recv, size_t bytes);
  // The tensors of a batch, in order, of `element_bytes` per element; their buffers must be apart
  // (tensors_apart) and must outlive this.
  CallData(std::span<const Segment> tensors, size_t element_bytes);
  CallData(const CallData&) = delete;
  CallData& operator=(const CallData&) = delete;

  size_t bytes() const { return bytes_; }

  // Calls fn(in, out, at, n) for each contiguous piece of bytes [first, first + n): `in` and
  // `out` point at the piece in its tensor's send and recv, `at` is its offset from `first`.
  template <typename Fn>
  void each(size_t first, size_t n, Fn&& fn) const {
    if (n == 0) return;
    if (!view_) {
      fn(static_cast<const std::byte*>(flat_.send) + first,
         static_cast<std::byte*>(flat_.recv) + first, size_t{0}, n);
      return;
    }
    view_->pieces(first, n, fn);
  }

  enum class Side { kSend, kRecv };
  // Sends bytes [first, first + n) of `side`; receives them into the recv side.
  transport::Request isend(transport::Channel& channel, transport::Tag tag, Side side, size_t first,
                           size_t n) const;
  transport::Request irecv(transport::Channel& channel, transport::Tag tag, size_t first,
                           size_t n) const;

 private:
  Segment flat_;                     // a flat call's buffers, counted in bytes
  std::vector<Segment> in_bytes_;    // a batch's tensors, counted in bytes
  std::optional<SegmentView> view_;  // over in_bytes_; none for a flat call
  size_t bytes_ = 0;
};

}  // namespace tutti::collectives
