#include "transport/pieces.hpp"

#include <algorithm>
#include <cstring>

namespace tutti::transport {
namespace {

// Calls fn(piece_pointer, position in the n bytes, length) for each run of [offset, offset + n).
template <typename Fn>
void walk(const PieceList& pieces, size_t offset, size_t n, Fn&& fn) {
  size_t at = 0;
  for (const auto& p : pieces) {
    if (at == n) return;
    if (offset >= p.size()) {
      offset -= p.size();
      continue;
    }
    const size_t len = std::min(p.size() - offset, n - at);
    fn(p.data() + offset, at, len);
    at += len;
    offset = 0;
  }
}

}  // namespace

void gather_from(const PieceList& pieces, size_t offset, std::byte* to, size_t n) {
  walk(pieces, offset, n,
       [&](const std::byte* p, size_t at, size_t len) { std::memcpy(to + at, p, len); });
}

void scatter_into(const PieceList& pieces, size_t offset, const std::byte* from, size_t n) {
  walk(pieces, offset, n,
       [&](std::byte* p, size_t at, size_t len) { std::memcpy(p, from + at, len); });
}

size_t total_bytes(const PieceList& pieces) {
  size_t total = 0;
  for (const auto& p : pieces) total += p.size();
  return total;
}

}  // namespace tutti::transport
