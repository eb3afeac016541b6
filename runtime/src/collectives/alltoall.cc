// All-to-all: every pair exchanges its blocks directly, all posted at once; the transport moves
// whichever is ready. Sends start with the right-hand neighbour and go round, so that not every
// rank sends to rank 0 first. Zero-byte blocks are still sent: each pair then always checks the
// other's call and sizes. In place (send == recv, equal counts) goes through a copy in scratch.
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/checks.hpp"
#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"
#include "collectives/scratch_slots.hpp"
#include "core/error.hpp"

namespace tutti::collectives {

void alltoallv(Context& ctx, const void* send, std::span<const size_t> send_counts, void* recv,
               std::span<const size_t> recv_counts, DataType type) {
  constexpr std::string_view kWhat = "alltoall";
  const size_t send_total = check_counts(ctx, kWhat, "send_counts", send_counts, type);
  const size_t recv_total = check_counts(ctx, kWhat, "recv_counts", recv_counts, type);
  check_pointer(ctx, kWhat, "send", send, send_total);
  check_pointer(ctx, kWhat, "recv", recv, recv_total);
  const size_t es = element_size(type);
  const auto me = static_cast<size_t>(ctx.rank);
  if (send_counts[me] != recv_counts[me]) {
    throw make_error(
        ErrorCode::kInvalidArgument,
        "alltoall on rank {}: send_counts[{}] = {} but recv_counts[{}] = {}; the block "
        "a rank sends itself must be the block it receives",
        ctx.rank, me, send_counts[me], me, recv_counts[me]);
  }
  const auto* in = bytes_of(send);
  auto* out = bytes_of(recv);
  const bool same_layout = std::equal(send_counts.begin(), send_counts.end(), recv_counts.begin());
  if (in == out && same_layout && send_total > 0) {
    // In place (as MPI_IN_PLACE): the blocks to send are copied aside first, since received
    // blocks overwrite them.
    std::byte* copy = ctx.scratch.get(kResultSlot, send_total * es).data();
    std::memcpy(copy, in, send_total * es);
    in = copy;
  } else if (send_total > 0 && recv_total > 0 && in < out + recv_total * es &&
             out < in + send_total * es) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "alltoall on rank {}: send and recv overlap; pass separate buffers, or the "
                     "same buffer with equal send and recv counts (in place)",
                     ctx.rank);
  }
  const Split sent = Split::of_counts(send_counts);
  const Split received = Split::of_counts(recv_counts);
  const auto tag = transport::make_tag(ctx.sequence, 0);
  std::vector<transport::Request> requests;
  requests.reserve(2 * static_cast<size_t>(ctx.size));
  for (int i = 1; i < ctx.size; ++i) {
    const auto peer = static_cast<size_t>(wrap(ctx.rank - i, ctx.size));
    requests.push_back(
        ctx.transport.channel(static_cast<int>(peer))
            .irecv(tag, {out + received.begin(peer) * es, received.size(peer) * es}));
  }
  for (int i = 1; i < ctx.size; ++i) {
    const auto peer = static_cast<size_t>(wrap(ctx.rank + i, ctx.size));
    requests.push_back(ctx.transport.channel(static_cast<int>(peer))
                           .isend(tag, {in + sent.begin(peer) * es, sent.size(peer) * es}));
  }
  copy_unless_same(in + sent.begin(me) * es, out + received.begin(me) * es, sent.size(me) * es);
  ctx.transport.wait(requests, ctx.deadline, kWhat);
}

}  // namespace tutti::collectives
