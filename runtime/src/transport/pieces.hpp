// Pieces: one message's bytes spread over several buffers in order (a gathered send, a scattered
// receive), and the copies between them and flat memory. A fused allreduce sends and receives its
// tensors this way where the channel can, instead of packing them into one buffer first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tutti::transport {

using ConstPieces = std::span<const std::span<const std::byte>>;
using Pieces = std::span<const std::span<std::byte>>;

// The pieces of one operation. Sends never write through them (Operation's contract).
using PieceList = std::vector<std::span<std::byte>>;

// The bytes [offset, end) of `pieces` as at most out.size() spans into them, stopping once they
// hold `enough` bytes (the last span is not cut); returns how many it filled. Span is
// std::span<std::byte> or std::span<const std::byte>.
template <typename Span>
size_t pieces_from(const PieceList& pieces, size_t offset, std::span<Span> out,
                   size_t enough = SIZE_MAX) {
  size_t filled = 0;
  size_t bytes = 0;
  for (const auto& p : pieces) {
    if (filled == out.size() || bytes >= enough) break;
    if (offset >= p.size()) {
      offset -= p.size();
      continue;
    }
    out[filled++] = Span(p.data() + offset, p.size() - offset);
    bytes += p.size() - offset;
    offset = 0;
  }
  return filled;
}

// Copies `n` bytes of `pieces` from `offset` on into `to`.
void gather_from(const PieceList& pieces, size_t offset, std::byte* to, size_t n);
// Copies `n` bytes from `from` into `pieces` from `offset` on.
void scatter_into(const PieceList& pieces, size_t offset, const std::byte* from, size_t n);
// The total bytes of `pieces`.
size_t total_bytes(const PieceList& pieces);

}  // namespace tutti::transport
