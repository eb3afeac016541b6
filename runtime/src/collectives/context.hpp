// What every collective algorithm gets: its communicator's share (the transport, who we are, the
// pipeline segment size, scratch memory, placement, settings), made once per communicator, and
// the call's own (a fresh sequence number for tags, the deadline, the scales).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "collectives/cpu_share.hpp"
#include "collectives/scratch.hpp"
#include "core/deadline.hpp"
#include "transport/transport.hpp"

namespace tutti::collectives {

class DeviceCollectives;
struct DeviceCall;
struct SelectionCache;
struct Settings;

// What every call on one communicator shares (as Gloo's Context): made once with the
// communicator, never per call.
struct Group {
  transport::Transport& transport;
  int rank;
  int size;
  size_t segment_bytes;
  Scratch& scratch;
  // host_of_rank[r]: index of rank r's host (equal index = shared memory), hosts numbered by their
  // lowest rank. Empty when the caller does not know the placement (the hierarchical allreduce
  // then refuses and selection treats the world as flat).
  std::span<const int> host_of_rank = {};
  // Where select_allreduce keeps its placement and crossover table across this communicator's
  // calls; null makes it work them out every call.
  SelectionCache* selection = nullptr;
  // The communicator's configuration; null means Settings::defaults().
  const Settings* settings = nullptr;
  // Options::tcp_segment_max_bytes: the most a ring's segment grows to where its links are TCP
  // (ring_segment_bytes); 0 keeps segment_bytes.
  size_t tcp_segment_max_bytes = 0;
  // How many ranks share each CPU where this call's ranks run (cpu_share.hpp): the cost model
  // prices TCP links by it. 1 (a CPU each, or unknown) unless the communicator says otherwise.
  CpuShare cpu_share = {};
};

// One call's own (as Gloo's AllreduceOptions).
struct CallState {
  uint64_t sequence;  // unique per collective call; use transport::make_tag(sequence, step)
  Deadline deadline;
  // allreduce's prescale and postscale (sum on floating types): each algorithm multiplies every
  // rank's input by prescale where it first reduces it, and the result by postscale where it is
  // final, inside those reduce loops (reduce::combine_scaled, reduce_many_scaled).
  double prescale = 1.0;
  double postscale = 1.0;
  // Set when this call's buffers are on a device: the communicator's device collectives and the
  // call's stream and scales. The allreduce registry's device entry then runs the call, whatever
  // algorithm was asked for (TUTTI_ALGO names host algorithms; TUTTI_DEVICE_ALLREDUCE the
  // device's).
  DeviceCollectives* device = nullptr;
  const DeviceCall* device_call = nullptr;
};

// What an algorithm gets: its group's state and this call's. A phase of a call that a subgroup
// runs (the hierarchical algorithms') gets a Group of its own (group_context).
struct Context : Group, CallState {
  Context(const Group& group, const CallState& call) : Group(group), CallState(call) {}

  bool scaled() const { return prescale != 1.0 || postscale != 1.0; }
};

// ctx.settings, or the defaults.
const Settings& settings_of(const Context& ctx);

// The context of one phase of `parent`'s call that a group of its ranks runs over `transport` (the
// hierarchical algorithms' local and cross-host phases): the parent's deadline, segments, scratch
// and settings, this rank's place in the group, and the phase's own sequence for its tags. No
// placement cache (the group's differs) and no scales (the phase sets its own).
inline Context group_context(const Context& parent, transport::Transport& transport, int rank,
                             int size, uint64_t sequence) {
  Group g{transport,      rank, size,    parent.segment_bytes,
          parent.scratch, {},   nullptr, parent.settings};
  g.tcp_segment_max_bytes = parent.tcp_segment_max_bytes;
  return Context(g, CallState{sequence, parent.deadline});
}

}  // namespace tutti::collectives
