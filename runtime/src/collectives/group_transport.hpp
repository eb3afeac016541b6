// A Transport over a subset of another Transport's channels, so that the flat algorithms (ring,
// tree, halving-doubling, broadcast) run unchanged on a group of ranks: the ranks of one host, or
// the leaders of all hosts. Group index i talks to world rank members[i] through a non-owning
// view of the world transport's channel; the world transport must outlive the group.
#pragma once

#include <memory>
#include <span>

#include "transport/transport.hpp"

namespace tutti::collectives {

// `members`: world ranks in group order; `self` is this rank's index in it.
std::unique_ptr<transport::Transport> make_group_transport(transport::Transport& world,
                                                           std::span<const int> members, int self);

}  // namespace tutti::collectives
