// What a device call carries besides its buffers: the caller's stream, the scales, the
// communicator's options (which allreduce path, the ring's chunk) and how to learn that the
// communicator was aborted (the collectives layer cannot see the communicator; comm hands it a
// check).
#pragma once

#include <functional>

#include "device/device_api.hpp"
#include "tutti/options.hpp"

namespace tutti::collectives {

struct DeviceCall {
  device::StreamId caller_stream = nullptr;  // CallOptions::stream
  double prescale = 1.0;
  double postscale = 1.0;
  // CallOptions::enqueue_only: the call returns once enqueued; its completion is watched later
  // (DeviceCollectives::settle).
  bool enqueue_only = false;
  // The communicator's (device_allreduce: the path; device_chunk_bytes: the ring's chunk); it
  // outlives the call.
  const Options* options = nullptr;
  // Throws the communicator's abort error once abort() was called from another thread.
  std::function<void()> check_interrupt;
};

}  // namespace tutti::collectives
