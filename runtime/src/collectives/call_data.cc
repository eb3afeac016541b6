#include "collectives/call_data.hpp"

#include <algorithm>

namespace tutti::collectives {

CallData::CallData(const void* send, void* recv, size_t bytes)
    : flat_{send, recv, bytes}, tensors_(&flat_, 1), bytes_(bytes) {}

CallData::CallData(std::span<const Segment> tensors, size_t element_bytes) : tensors_(tensors) {
  starts_.reserve(tensors.size() + 1);
  size_t at = 0;
  for (const Segment& s : tensors) {
    starts_.push_back(at);
    at += s.count * element_bytes;
  }
  starts_.push_back(at);
  bytes_ = at;
}

size_t CallData::index_of(size_t at) const {
  const auto it = std::upper_bound(starts_.begin(), starts_.end() - 1, at);
  return static_cast<size_t>(it - starts_.begin()) - 1;
}

transport::Request CallData::isend(transport::Channel& channel, transport::Tag tag, Side side,
                                   size_t first, size_t n) const {
  // A flat call's range is one span: no list to build (broadcast and allreduce of one buffer).
  if (flat()) {
    const void* base = side == Side::kSend ? flat_.send : flat_.recv;
    return channel.isend(tag, {static_cast<const std::byte*>(base) + first, n});
  }
  std::vector<std::span<const std::byte>> pieces;
  each(first, n, [&](const std::byte* in, std::byte* out, size_t, size_t len) {
    pieces.emplace_back(side == Side::kSend ? in : out, len);
  });
  if (pieces.size() <= 1)
    return channel.isend(tag, pieces.empty() ? std::span<const std::byte>() : pieces[0]);
  return channel.isend_pieces(tag, pieces);
}

transport::Request CallData::irecv(transport::Channel& channel, transport::Tag tag, size_t first,
                                   size_t n) const {
  if (flat()) return channel.irecv(tag, {static_cast<std::byte*>(flat_.recv) + first, n});
  std::vector<std::span<std::byte>> pieces;
  each(first, n, [&](const std::byte*, std::byte* out, size_t, size_t len) {
    pieces.emplace_back(out, len);
  });
  if (pieces.size() <= 1)
    return channel.irecv(tag, pieces.empty() ? std::span<std::byte>() : pieces[0]);
  return channel.irecv_pieces(tag, pieces);
}

}  // namespace tutti::collectives
