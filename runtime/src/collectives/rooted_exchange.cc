#include "collectives/rooted_exchange.hpp"

#include <vector>

#include "collectives/checks.hpp"
#include "transport/transport.hpp"

namespace tutti::collectives {
namespace {

std::span<const std::byte> block_of(const std::byte* base, const Split& blocks, size_t es, int r) {
  const auto i = static_cast<size_t>(r);
  return {base + blocks.begin(i) * es, blocks.size(i) * es};
}

std::span<std::byte> block_of(std::byte* base, const Split& blocks, size_t es, int r) {
  const auto i = static_cast<size_t>(r);
  return {base + blocks.begin(i) * es, blocks.size(i) * es};
}

}  // namespace

void gather_blocks(Context& ctx, const std::byte* mine, std::byte* out, const Split& blocks,
                   size_t element_bytes, int root, uint32_t step, std::string_view what) {
  const auto data_tag = transport::make_tag(ctx.sequence, step);
  const auto ack_tag = transport::make_tag(ctx.sequence, step + 1);
  const size_t own_bytes = blocks.size(static_cast<size_t>(ctx.rank)) * element_bytes;
  std::vector<transport::Request> requests;
  if (ctx.rank != root) {
    requests.push_back(ctx.transport.channel(root).isend(data_tag, {mine, own_bytes}));
    requests.push_back(ctx.transport.channel(root).irecv(ack_tag, {}));
    ctx.transport.wait(requests, ctx.deadline, what);
    return;
  }
  requests.reserve(static_cast<size_t>(ctx.size));
  // Posted from the root's right-hand neighbour on, so that ranks are not all served in one order.
  for (int i = 1; i < ctx.size; ++i) {
    const int peer = wrap(root + i, ctx.size);
    requests.push_back(
        ctx.transport.channel(peer).irecv(data_tag, block_of(out, blocks, element_bytes, peer)));
  }
  copy_unless_same(mine, block_of(out, blocks, element_bytes, root).data(), own_bytes);
  ctx.transport.wait(requests, ctx.deadline, what);
  requests.clear();
  for (int i = 1; i < ctx.size; ++i)
    requests.push_back(ctx.transport.channel(wrap(root + i, ctx.size)).isend(ack_tag, {}));
  ctx.transport.wait(requests, ctx.deadline, what);
}

void scatter_blocks(Context& ctx, const std::byte* in, std::byte* mine, const Split& blocks,
                    size_t element_bytes, int root, uint32_t step, std::string_view what) {
  const auto data_tag = transport::make_tag(ctx.sequence, step);
  const auto ack_tag = transport::make_tag(ctx.sequence, step + 1);
  const size_t own_bytes = blocks.size(static_cast<size_t>(ctx.rank)) * element_bytes;
  std::vector<transport::Request> requests;
  if (ctx.rank != root) {
    auto request = ctx.transport.channel(root).irecv(data_tag, {mine, own_bytes});
    ctx.transport.wait(std::span(&request, 1), ctx.deadline, what);
    request = ctx.transport.channel(root).isend(ack_tag, {});
    ctx.transport.wait(std::span(&request, 1), ctx.deadline, what);
    return;
  }
  requests.reserve(2 * static_cast<size_t>(ctx.size));
  for (int i = 1; i < ctx.size; ++i) {
    const int peer = wrap(root + i, ctx.size);
    requests.push_back(ctx.transport.channel(peer).irecv(ack_tag, {}));
    requests.push_back(
        ctx.transport.channel(peer).isend(data_tag, block_of(in, blocks, element_bytes, peer)));
  }
  copy_unless_same(block_of(in, blocks, element_bytes, root).data(), mine, own_bytes);
  ctx.transport.wait(requests, ctx.deadline, what);
}

}  // namespace tutti::collectives
