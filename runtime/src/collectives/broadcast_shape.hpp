// Which shape a broadcast takes: a binomial tree (log2(size) rounds, whole messages) or a chain
// root -> root+1 -> ... pipelined in segments. broadcast.cc runs the choice and the cost model
// prices it (hier's on-host broadcast), so both read it from here.
#pragma once

#include <cstddef>

namespace tutti::collectives {

// Below this the chain's size-1 hops of latency cost more than the binomial tree's repeated sends.
inline constexpr size_t kBinomialBroadcastMaxBytes = 64 << 10;

// True for the binomial tree, false for the chain. On two ranks both are one hop, and the tree
// sends it as one message.
inline constexpr bool binomial_broadcast(size_t bytes, int ranks) {
  return bytes <= kBinomialBroadcastMaxBytes || ranks == 2;
}

}  // namespace tutti::collectives
