// Dissemination barrier: in round k every rank signals rank+2^k and waits for rank-2^k, so after
// ceil(log2(size)) rounds every rank has (transitively) heard from every other. Messages are empty.
#include <array>

#include "collectives/chunking.hpp"
#include "collectives/collectives.hpp"

namespace tutti::collectives {

void barrier(Context& ctx) {
  uint32_t round = 0;
  for (int distance = 1; distance < ctx.size; distance *= 2, ++round) {
    const auto tag = transport::make_tag(ctx.sequence, round);
    std::array<transport::Request, 2> requests{
        ctx.transport.channel(wrap(ctx.rank - distance, ctx.size)).irecv(tag, {}),
        ctx.transport.channel(wrap(ctx.rank + distance, ctx.size)).isend(tag, {}),
    };
    ctx.transport.wait(requests, ctx.deadline, "barrier");
  }
}

}  // namespace tutti::collectives
