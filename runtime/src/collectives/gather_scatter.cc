// Gather to a root and scatter from it: one direct message per rank (rooted_exchange.hpp). The
// root's link carries every byte either way, so a tree would only add hops.
#include "collectives/checks.hpp"
#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"
#include "collectives/rooted_exchange.hpp"

namespace tutti::collectives {

void gatherv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
             DataType type, int root) {
  constexpr std::string_view kWhat = "gather";
  const size_t total = check_counts(ctx, kWhat, "counts", counts, type);
  check_root(ctx, kWhat, root);
  check_pointer(ctx, kWhat, "send", send, counts[static_cast<size_t>(ctx.rank)]);
  if (ctx.rank == root) check_pointer(ctx, kWhat, "recv (at the root)", recv, total);
  const Split blocks = Split::of_counts(counts);
  gather_blocks(ctx, bytes_of(send), bytes_of(recv), blocks, element_size(type), root, 0, kWhat);
}

void scatterv(Context& ctx, const void* send, void* recv, std::span<const size_t> counts,
              DataType type, int root) {
  constexpr std::string_view kWhat = "scatter";
  const size_t total = check_counts(ctx, kWhat, "counts", counts, type);
  check_root(ctx, kWhat, root);
  check_pointer(ctx, kWhat, "recv", recv, counts[static_cast<size_t>(ctx.rank)]);
  if (ctx.rank == root) check_pointer(ctx, kWhat, "send (at the root)", send, total);
  const Split blocks = Split::of_counts(counts);
  scatter_blocks(ctx, bytes_of(send), bytes_of(recv), blocks, element_size(type), root, 0, kWhat);
}

}  // namespace tutti::collectives
