// Broadcast from any root. Small messages take a binomial tree (log2(size) rounds); large ones a
// chain root -> root+1 -> ... pipelined in segments, where every rank receives and forwards each
// byte once, so the time approaches one message transfer plus (size-1) segment hops.
//
// The root's children answer with an empty acknowledgement. It costs the root one hop, and it is
// what lets a root notice a peer in another call: without it a root receives nothing, so two ranks
// that each believed themselves the root would both return as if all went well.
#include <vector>

#include "collectives/broadcast_shape.hpp"
#include "collectives/call_data.hpp"
#include "collectives/checks.hpp"
#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"
#include "core/error.hpp"

namespace tutti::collectives {
namespace {

constexpr std::string_view kWhat = "broadcast";
constexpr uint32_t kAckStep = 2;

void acknowledge_root(Context& ctx, int root) {
  auto request = ctx.transport.channel(root).isend(transport::make_tag(ctx.sequence, kAckStep), {});
  ctx.transport.wait(std::span(&request, 1), ctx.deadline, kWhat);
}

void await_acknowledgements(Context& ctx, std::span<const int> children) {
  std::vector<transport::Request> acks;
  for (int child : children)
    acks.push_back(
        ctx.transport.channel(child).irecv(transport::make_tag(ctx.sequence, kAckStep), {}));
  ctx.transport.wait(acks, ctx.deadline, kWhat);
}

void binomial_broadcast(Context& ctx, const CallData& data, int root) {
  const size_t bytes = data.bytes();
  const int relative = wrap(ctx.rank - root, ctx.size);
  const auto tag = transport::make_tag(ctx.sequence, 0);
  int mask = 1;
  while (mask < ctx.size) {
    if (relative & mask) {
      auto request =
          data.irecv(ctx.transport.channel(wrap(relative - mask + root, ctx.size)), tag, 0, bytes);
      ctx.transport.wait(std::span(&request, 1), ctx.deadline, kWhat);
      break;
    }
    mask <<= 1;
  }
  std::vector<transport::Request> sends;
  std::vector<int> children;
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < ctx.size) {
      children.push_back(wrap(relative + mask + root, ctx.size));
      sends.push_back(
          data.isend(ctx.transport.channel(children.back()), tag, CallData::Side::kRecv, 0, bytes));
    }
  }
  // The root's children are the powers of two.
  if (relative != 0 && (relative & (relative - 1)) == 0) acknowledge_root(ctx, root);
  ctx.transport.wait(sends, ctx.deadline, kWhat);
  if (relative == 0) await_acknowledgements(ctx, children);
}

void chain_broadcast(Context& ctx, const CallData& data, int root) {
  const size_t bytes = data.bytes();
  const int relative = wrap(ctx.rank - root, ctx.size);
  const auto tag = transport::make_tag(ctx.sequence, 1);
  const size_t per_segment = std::max<size_t>(1, ctx.segment_bytes);
  const size_t segments = segment_count(bytes, per_segment);
  auto length = [&](size_t s) { return std::min(per_segment, bytes - s * per_segment); };
  const bool has_next = relative + 1 < ctx.size;
  transport::Channel* next =
      has_next ? &ctx.transport.channel(wrap(ctx.rank + 1, ctx.size)) : nullptr;
  std::vector<transport::Request> sends;
  if (relative == 0) {
    for (size_t s = 0; s < segments; ++s)
      sends.push_back(data.isend(*next, tag, CallData::Side::kRecv, s * per_segment, length(s)));
  } else {
    // Every segment lands in place, so all receives can be posted up front.
    auto& prev = ctx.transport.channel(wrap(ctx.rank - 1, ctx.size));
    std::vector<transport::Request> receives;
    receives.reserve(segments);
    for (size_t s = 0; s < segments; ++s)
      receives.push_back(data.irecv(prev, tag, s * per_segment, length(s)));
    for (size_t s = 0; s < segments; ++s) {
      ctx.transport.wait(std::span(&receives[s], 1), ctx.deadline, kWhat);
      if (has_next)
        sends.push_back(data.isend(*next, tag, CallData::Side::kRecv, s * per_segment, length(s)));
    }
    if (relative == 1) acknowledge_root(ctx, root);
  }
  ctx.transport.wait(sends, ctx.deadline, kWhat);
  if (relative == 0) {
    const int child = wrap(root + 1, ctx.size);
    await_acknowledgements(ctx, std::span(&child, 1));
  }
}

}  // namespace

void broadcast(Context& ctx, void* buf, size_t count, DataType type, int root) {
  const size_t bytes = check_buffers(ctx, kWhat, buf, buf, count, type);
  bound_segment(ctx, bytes);
  if (root < 0 || root >= ctx.size) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "broadcast on rank {}: root {} is outside the world of {} ranks; pass a root "
                     "in 0..{}",
                     ctx.rank, root, ctx.size, ctx.size - 1);
  }
  if (ctx.size == 1) return;
  if (bytes == 0) return barrier(ctx);  // meets the peers: see allreduce
  broadcast_data(ctx, CallData(buf, buf, bytes), root);
}

void broadcast_data(Context& ctx, const CallData& data, int root) {
  if (ctx.size == 1) return;
  if (binomial_broadcast(data.bytes(), ctx.size)) {
    binomial_broadcast(ctx, data, root);
  } else {
    chain_broadcast(ctx, data, root);
  }
}

}  // namespace tutti::collectives
