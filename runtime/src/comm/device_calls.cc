// The device side of a communicator: which calls take device (CUDA) buffers, and the dispatch to
// collectives::DeviceCollectives by where the buffers live (Horovod's operation manager, with
// one question per buffer: device::api().locate). Without a device every buffer is host memory and
// locate makes no runtime call, so the host path pays one virtual call per buffer.
#include <cmath>
#include <cstdlib>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "device/device_api.hpp"

namespace tutti::comm {

namespace {

constexpr std::string_view kDeviceCalls =
    "allreduce, broadcast, allgather, reduce_scatter and the engine's allreduce_async";

// TUTTI_ALGO ring/tree becomes NCCL's own algorithm choice, read by NCCL when it makes its
// communicator; a user's NCCL_ALGO wins (setenv does not overwrite). This is process-wide, as
// NCCL's setting is: the first communicator to make an NCCL communicator decides.
void map_algorithm_onto_nccl(Algorithm algorithm) {
  const char* nccl = algorithm == Algorithm::kRing   ? "Ring"
                     : algorithm == Algorithm::kTree ? "Tree"
                                                     : nullptr;
  if (nccl != nullptr) ::setenv("NCCL_ALGO", nccl, /*overwrite=*/0);
}

// NCCL's send/recv between hosts moves NCCL_P2P_NET_CHUNKSIZE bytes per network step, 128 KiB by
// default; tutti's device ring is send/recv. On an H100 with two pretend hosts (NCCL over
// sockets) our ring ran 128 MiB at 0.74-0.75x NCCL's allreduce with 128 KiB and 1.08-1.36x with
// 512 KiB (docs/PERFORMANCE.md). NCCL reads the variable once per process, at its first
// communicator, and has no per-communicator setting for it, so it is set before this process's
// first device call makes one, unless the user set it (or Options::nccl_p2p_chunk_bytes is 0).
// NCCL's collectives do not use it.
void map_p2p_chunk_onto_nccl(uint64_t bytes) {
  if (bytes > 0) ::setenv("NCCL_P2P_NET_CHUNKSIZE", std::to_string(bytes).c_str(), /*overwrite=*/0);
}

}  // namespace

std::optional<int> Communicator::device_of(std::string_view name,
                                           std::initializer_list<const void*> buffers) const {
  device::DeviceApi& api = device::api();
  std::optional<int> device;
  bool host = false;
  const void* previous = nullptr;
  for (const void* p : buffers) {
    // nullptr: a buffer this rank does not touch. The same pointer again (in place) is not asked
    // about twice: each cudaPointerGetAttributes is a few hundred ns of a call's cost.
    if (p == nullptr || p == previous) continue;
    previous = p;
    const device::PointerInfo info = api.locate(p);
    if (!info.on_device) {
      host = true;
    } else if (device && *device != info.device) {
      throw make_error(ErrorCode::kInvalidArgument,
                       "{} on rank {}: its buffers are on devices {} and {}; pass buffers of one "
                       "device",
                       name, rank_, *device, info.device);
    } else {
      device = info.device;
    }
  }
  if (device && host)
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: one buffer is in device memory and another in host memory; "
                     "pass both on the device (or both on the host)",
                     name, rank_);
  return device;
}

void Communicator::refuse_device(std::string_view name,
                                 std::initializer_list<const void*> buffers) const {
  device::DeviceApi& api = device::api();
  for (const void* p : buffers)
    if (p != nullptr && api.locate(p).on_device)
      throw make_error(ErrorCode::kInvalidArgument,
                       "{} on rank {}: a buffer is in device (CUDA) memory, but {} takes host "
                       "buffers only; on device buffers tutti runs {}. Copy the data to the host "
                       "for this call",
                       name, rank_, name, kDeviceCalls);
}

collectives::DeviceCall Communicator::device_call(const CallOptions& call) {
  collectives::DeviceCall d;
  d.caller_stream = call.stream;
  d.prescale = call.prescale;
  d.postscale = call.postscale;
  d.enqueue_only = call.enqueue_only;
  d.options = &options_;
  d.check_interrupt = [] { CallScope::check(); };
  return d;
}

collectives::DeviceCollectives& Communicator::device_collectives(int device) {
  std::lock_guard lock(device_mutex_);
  if (!device_) {
    map_algorithm_onto_nccl(options_.algorithm);
    map_p2p_chunk_onto_nccl(options_.nccl_p2p_chunk_bytes);
    device_ = std::make_shared<collectives::DeviceCollectives>(
        rank_, size_, device, options_.init_timeout, std::move(inherited_nccl_));
  } else if (device_->device() != device) {
    throw make_error(ErrorCode::kInvalidArgument,
                     "device call on rank {}: its buffers are on device {}, but this "
                     "communicator runs on device {} (its first device call's); use one "
                     "communicator per device",
                     rank_, device, device_->device());
  }
  return *device_;
}

bool Communicator::settle_device(bool block) {
  const auto device = device_if_any();
  if (!device) return true;
  bool done = false;
  // Not a collective: no sequence number of its own and nothing sent, so ranks may call it any
  // number of times. Each call in flight carries its own deadline.
  guarded(block ? "device_wait" : "device_done", sequence_, Deadline::never(), [&] {
    if (device->in_flight() == 0) {
      done = true;
      return;
    }
    collectives::Context ctx(*group_, {sequence_, Deadline::never()});
    done = device->settle(ctx, device_call({}), block);
  });
  return done;
}

std::shared_ptr<collectives::DeviceCollectives> Communicator::device_if_any() {
  std::lock_guard lock(device_mutex_);
  return device_;
}

void Communicator::check_device_scales(std::string_view name, DataType type, ReduceOp op,
                                       const CallOptions& call) const {
  if (!valid(type) || !valid(op) || !supports(type, op))
    throw make_error(ErrorCode::kInvalidArgument, "{} on rank {}: {} is not defined on {}", name,
                     rank_, to_string(op), to_string(type));
  const bool scaled = call.prescale != 1.0 || call.postscale != 1.0;
  if (scaled && (!is_floating(type) || (op != ReduceOp::kSum && op != ReduceOp::kAvg)))
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: prescale {} / postscale {} need a floating type and sum or "
                     "avg, not {} {}; scale integers yourself",
                     name, rank_, call.prescale, call.postscale, to_string(type), to_string(op));
}

}  // namespace tutti::comm
