// The bytes one call moves, as the hierarchical allreduce and broadcast see them: one flat buffer
// pair, or the tensors of a fused batch where they lie. Ranges are bytes of the logical vector
// (the tensors' concatenation). A flat range goes out as one plain message, a batch's as one
// message of pieces (the channel gathers and scatters); both match a plain message of the same
// bytes on the other side, so a rank that packs its batch still meets one that does not.
#pragma once

#include <algorithm>
#include <cstddef>
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
    if (flat()) {
      fn(static_cast<const std::byte*>(flat_.send) + first,
         static_cast<std::byte*>(flat_.recv) + first, size_t{0}, n);
      return;
    }
    size_t i = index_of(first);
    for (size_t done = 0; done < n; ++i) {
      const Segment& s = tensors_[i];
      const size_t inside = first + done - starts_[i];
      const size_t len = std::min(starts_[i + 1] - starts_[i] - inside, n - done);
      if (len > 0)
        fn(static_cast<const std::byte*>(s.send) + inside, static_cast<std::byte*>(s.recv) + inside,
           done, len);
      done += len;
    }
  }

  enum class Side { kSend, kRecv };
  // Sends bytes [first, first + n) of `side`; receives them into the recv side.
  transport::Request isend(transport::Channel& channel, transport::Tag tag, Side side, size_t first,
                           size_t n) const;
  transport::Request irecv(transport::Channel& channel, transport::Tag tag, size_t first,
                           size_t n) const;

 private:
  bool flat() const { return tensors_.data() == &flat_; }
  // The tensor holding byte `at` of a batch (the last one for at == bytes()).
  size_t index_of(size_t at) const;

  Segment flat_;                      // the flat call's buffers, counted in bytes
  std::span<const Segment> tensors_;  // flat_, or the batch's (counted in elements)
  std::vector<size_t> starts_;        // a batch's byte offset of every tensor, then bytes()
  size_t bytes_ = 0;
};

}  // namespace tutti::collectives
