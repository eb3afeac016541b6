#include "collectives/call_data.hpp"

namespace tutti::collectives {

CallData::CallData(const void* send, void* recv, size_t bytes)
    : flat_{send, recv, bytes}, bytes_(bytes) {}

CallData::CallData(std::span<const Segment> tensors, size_t element_bytes) {
  // A view in bytes: the hierarchical allreduce and broadcast cut their segments in bytes.
  in_bytes_.reserve(tensors.size());
  for (const Segment& s : tensors) {
    in_bytes_.push_back({s.send, s.recv, s.count * element_bytes});
    bytes_ += s.count * element_bytes;
  }
  view_.emplace(in_bytes_, 1);
}

transport::Request CallData::isend(transport::Channel& channel, transport::Tag tag, Side side,
                                   size_t first, size_t n) const {
  // A flat call's range is one span: no list to build (broadcast and allreduce of one buffer).
  if (!view_) {
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
  if (!view_) return channel.irecv(tag, {static_cast<std::byte*>(flat_.recv) + first, n});
  std::vector<std::span<std::byte>> pieces;
  each(first, n, [&](const std::byte*, std::byte* out, size_t, size_t len) {
    pieces.emplace_back(out, len);
  });
  if (pieces.size() <= 1)
    return channel.irecv(tag, pieces.empty() ? std::span<std::byte>() : pieces[0]);
  return channel.irecv_pieces(tag, pieces);
}

}  // namespace tutti::collectives
