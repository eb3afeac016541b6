// Broadcast from any root. Small messages take a binomial tree (log2(size) rounds); large ones a
// chain root -> root+1 -> ... pipelined in segments, where every rank receives and forwards each
// byte once, so the time approaches one message transfer plus (size-1) segment hops.
#include <vector>

#include "collectives/checks.hpp"
#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"
#include "core/error.hpp"

namespace tutti::collectives {
namespace {

constexpr std::string_view kWhat = "broadcast";
// Below this the chain's size-1 hops of latency cost more than the binomial tree's repeated sends.
constexpr size_t kBinomialMaxBytes = 64 << 10;

void binomial_broadcast(Context& ctx, std::byte* buf, size_t bytes, int root) {
  const int relative = wrap(ctx.rank - root, ctx.size);
  const auto tag = transport::make_tag(ctx.sequence, 0);
  int mask = 1;
  while (mask < ctx.size) {
    if (relative & mask) {
      auto request =
          ctx.transport.channel(wrap(relative - mask + root, ctx.size)).irecv(tag, {buf, bytes});
      ctx.transport.wait(std::span(&request, 1), ctx.deadline, kWhat);
      break;
    }
    mask <<= 1;
  }
  std::vector<transport::Request> sends;
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < ctx.size) {
      sends.push_back(
          ctx.transport.channel(wrap(relative + mask + root, ctx.size)).isend(tag, {buf, bytes}));
    }
  }
  ctx.transport.wait(sends, ctx.deadline, kWhat);
}

void chain_broadcast(Context& ctx, std::byte* buf, size_t bytes, int root) {
  const int relative = wrap(ctx.rank - root, ctx.size);
  const auto tag = transport::make_tag(ctx.sequence, 1);
  const size_t per_segment = std::max<size_t>(1, ctx.segment_bytes);
  const size_t segments = segment_count(bytes, per_segment);
  auto segment = [&](size_t s) {
    return std::span(buf + s * per_segment, std::min(per_segment, bytes - s * per_segment));
  };
  const bool has_next = relative + 1 < ctx.size;
  transport::Channel* next =
      has_next ? &ctx.transport.channel(wrap(ctx.rank + 1, ctx.size)) : nullptr;
  std::vector<transport::Request> sends;
  if (relative == 0) {
    for (size_t s = 0; s < segments; ++s) sends.push_back(next->isend(tag, segment(s)));
  } else {
    // Every segment lands in place, so all receives can be posted up front.
    auto& prev = ctx.transport.channel(wrap(ctx.rank - 1, ctx.size));
    std::vector<transport::Request> receives;
    receives.reserve(segments);
    for (size_t s = 0; s < segments; ++s) receives.push_back(prev.irecv(tag, segment(s)));
    for (size_t s = 0; s < segments; ++s) {
      ctx.transport.wait(std::span(&receives[s], 1), ctx.deadline, kWhat);
      if (has_next) sends.push_back(next->isend(tag, segment(s)));
    }
  }
  ctx.transport.wait(sends, ctx.deadline, kWhat);
}

}  // namespace

void broadcast(Context& ctx, void* buf, size_t count, DataType type, int root) {
  check_buffers(ctx, kWhat, buf, buf, count, type);
  if (root < 0 || root >= ctx.size) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "broadcast on rank {}: root {} is outside the world of {} ranks; pass a root "
                     "in 0..{}",
                     ctx.rank, root, ctx.size, ctx.size - 1);
  }
  const size_t bytes = count * element_size(type);
  if (bytes == 0 || ctx.size == 1) return;
  if (bytes <= kBinomialMaxBytes || ctx.size == 2) {
    binomial_broadcast(ctx, bytes_of(buf), bytes, root);
  } else {
    chain_broadcast(ctx, bytes_of(buf), bytes, root);
  }
}

}  // namespace tutti::collectives
