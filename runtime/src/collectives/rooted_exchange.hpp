// The root-to-everyone transfers behind gather, scatter and the last phase of a rooted reduce.
//
// Every rank exchanges exactly one message with the root, zero bytes included, so a rank in
// another call (or with other counts) is always caught by the message checks. The side that only
// sends then waits for an empty acknowledgement: without it, a rank whose peer is in another call
// would return as if all went well (broadcast.cc does the same for its root).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectives/chunking.hpp"
#include "collectives/context.hpp"

namespace tutti::collectives {

// root's `out` receives block r (blocks.begin/size(r) elements) from every rank r; `mine` is this
// rank's block (may already be in place in out at root). Uses tag steps `step` and `step + 1`.
void gather_blocks(Context& ctx, const std::byte* mine, std::byte* out, const Split& blocks,
                   size_t element_bytes, int root, uint32_t step, std::string_view what);

// Every rank r's `mine` receives block r of root's `in` (may be in place at root). Uses tag steps
// `step` and `step + 1`.
void scatter_blocks(Context& ctx, const std::byte* in, std::byte* mine, const Split& blocks,
                    size_t element_bytes, int root, uint32_t step, std::string_view what);

}  // namespace tutti::collectives
