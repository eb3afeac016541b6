#include "collectives/device/device_collectives.hpp"

#include <algorithm>
#include <optional>
#include <thread>

#include "collectives/checks.hpp"
#include "collectives/collectives.hpp"
#include "collectives/hierarchy.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::collectives {

namespace {

// The device paths' numbers in the call signature's algorithm field, above the host algorithms'
// (0..5), so that ranks on different paths (a per-rank TUTTI_DEVICE_ALLREDUCE) or one rank on the
// host path of an allreduce fail with kMismatch.
constexpr uint8_t kDeviceAlgorithmBase = transport::CallSignature::kDeviceAlgorithmBase;
constexpr uint8_t kNoPath = transport::CallSignature::kDeviceCall;

// Phases of one device call that meet the peers on the host (hierarchy.hpp's phase_sequence).
constexpr unsigned kUniqueIdPhase = 1;

std::string_view path_name(DeviceAllreduce path) {
  return env::choice_name("TUTTI_DEVICE_ALLREDUCE", static_cast<int>(path));
}

}  // namespace

DeviceCollectives::DeviceCollectives(int rank, int size, int device,
                                     std::chrono::milliseconds init_timeout,
                                     std::unique_ptr<device::NcclComm> nccl)
    : rank_(rank),
      size_(size),
      device_(device),
      init_timeout_(init_timeout),
      nccl_(std::move(nccl)) {
  device::api().set_device(device_);
  stream_ = device::Stream(device_);
  caller_ready_ = device::Event(device_);
  done_ = device::Event(device_);
}

DeviceCollectives::~DeviceCollectives() {
  // Calls still in flight (enqueue_only) use our stream and scratch: they end before those go.
  // Past the oldest one's deadline NCCL is aborted, which ends its work; what still runs 10 s
  // after that is left to the runtime (cudaStreamDestroy lets pending work finish).
  if (in_flight_.empty()) return;
  device::DeviceApi& api = device::api();
  const device::EventId last = in_flight_.back().done.id();
  std::optional<Deadline> after_abort;
  while (!api.query(last)) {
    if (!after_abort && in_flight_.front().deadline.expired()) {
      abort();
      after_abort = Deadline::after(std::chrono::seconds(10));
    }
    if (after_abort && after_abort->expired()) {
      log::warn(
          "rank {}: device work of a communicator being destroyed had not ended 10 s after "
          "ncclCommAbort; its stream is left to finish it",
          rank_);
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

bool DeviceCollectives::has_nccl() {
  std::lock_guard lock(nccl_mutex_);
  return nccl_ != nullptr && !aborted_;
}

void DeviceCollectives::abort() noexcept {
  std::lock_guard lock(nccl_mutex_);
  aborted_ = true;
  if (nccl_) nccl_->abort();
  if (host_nccl_) host_nccl_->abort();
}

void DeviceCollectives::fail(ErrorCode code, const std::string& message) {
  abort();
  throw make_error(code, "{}", message);
}

void* DeviceCollectives::scratch(Context& ctx, const DeviceCall& call, int slot, size_t bytes) {
  device::Buffer& b = scratch_[slot];
  if (b.bytes() < bytes) {
    // cudaFree waits for the device, with no deadline: the calls in flight end first, under
    // theirs (a dead peer's NCCL work would otherwise hold the free forever).
    settle(ctx, call, /*block=*/true);
    b.reset();  // free first: the old buffer's contents are never needed
    b = device::Buffer(std::max(bytes, b.bytes() * 2), device_);
  }
  return b.data();
}

void* DeviceCollectives::pinned(Context& ctx, const DeviceCall& call, size_t bytes) {
  if (pinned_.bytes() < bytes) {
    settle(ctx, call, /*block=*/true);  // as in scratch(): cudaFreeHost waits for the device too
    pinned_.reset();
    pinned_ = device::Buffer(std::max(bytes, pinned_.bytes() * 2), -1);
  }
  return pinned_.data();
}

void DeviceCollectives::agree(Context& ctx, const DeviceCall& call, uint8_t path) {
  // What calls returned early left in flight: one look, so that their failures surface here at
  // the latest (the peers learn of it from the abort notice, in this call's barrier).
  settle(ctx, call, /*block=*/false);
  // Cost: one dissemination barrier on the host, ceil(log2(size)) rounds of empty messages per
  // device call. NCCL itself checks nothing: ranks in different calls would hang or exchange the
  // wrong bytes, so this is the price of kMismatch instead.
  ctx.transport.set_call_algorithm(path);
  collectives::barrier(ctx);
  // The thread that drives the communicator may change between calls (the engine's, the
  // caller's): NCCL's init and every enqueue need our device current on this one.
  device::api().set_device(device_);
  std::lock_guard lock(nccl_mutex_);
  if (aborted_)
    throw make_error(ErrorCode::kAborted,
                     "rank {}: this communicator's NCCL communicator was aborted by an earlier "
                     "failure; make a new communicator",
                     rank_);
}

device::NcclComm& DeviceCollectives::nccl(Context& ctx) {
  {
    std::lock_guard lock(nccl_mutex_);
    if (nccl_) return *nccl_;
  }
  // Every rank gets here in the same call (agreement came first), so the broadcast pairs up.
  device::UniqueId id{};
  if (ctx.rank == 0) id = device::api().nccl_unique_id();
  Context phase = ctx;
  phase.sequence = phase_sequence(ctx.sequence, kUniqueIdPhase);
  collectives::broadcast(phase, id.data(), id.size(), DataType::kUInt8, 0);
  const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
      Deadline::after(init_timeout_).earlier(ctx.deadline).remaining());
  auto made = device::api().nccl_init(id, size_, rank_, device_, remaining);
  log::debug("rank {}: NCCL communicator of {} ranks on device {} made", rank_, size_, device_);
  std::lock_guard lock(nccl_mutex_);
  nccl_ = std::move(made);
  if (aborted_) nccl_->abort();  // abort() came while it was being made
  return *nccl_;
}

std::unique_ptr<device::NcclComm> DeviceCollectives::split_nccl(int color, int key,
                                                                std::chrono::milliseconds timeout) {
  device::NcclComm* comm = nullptr;
  {
    std::lock_guard lock(nccl_mutex_);
    comm = nccl_.get();
  }
  if (comm == nullptr)
    throw make_error(ErrorCode::kInternal, "rank {}: split_nccl without an NCCL communicator",
                     rank_);
  device::api().set_device(device_);
  return comm->split(color, key, timeout);
}

void DeviceCollectives::begin_on_stream(const DeviceCall& call) {
  device::DeviceApi& api = device::api();
  api.record(caller_ready_.id(), call.caller_stream);
  api.wait(stream_.id(), caller_ready_.id());
}

void DeviceCollectives::finish_on_stream(Context& ctx, const DeviceCall& call,
                                         const std::string& what) {
  device::DeviceApi& api = device::api();
  if (!call.enqueue_only) {
    api.record(done_.id(), stream_.id());
    api.wait(call.caller_stream, done_.id());
    wait_on_host(ctx, call, done_.id(), what);
    // Our stream ran everything before this call too: the calls in flight are done.
    settle(ctx, call, /*block=*/false);
    return;
  }
  device::Event done;
  if (spare_events_.empty()) {
    done = device::Event(device_);
  } else {
    done = std::move(spare_events_.back());
    spare_events_.pop_back();
  }
  api.record(done.id(), stream_.id());
  api.wait(call.caller_stream, done.id());
  in_flight_.push_back({std::move(done), what, ctx.deadline, std::chrono::steady_clock::now()});
  if (in_flight_.size() > kMaxInFlight) settle_oldest(ctx, call, /*block=*/true);
}

std::span<const DeviceCollectives::Path> DeviceCollectives::paths() {
  static constexpr Path kPaths[] = {
      {DeviceAllreduce::kNccl, true,
       [](const Context&, bool nccl_reduces, DataType, ReduceOp) { return nccl_reduces; },
       "NCCL cannot reduce", &DeviceCollectives::nccl_allreduce},
      {DeviceAllreduce::kRing, true, [](const Context&, bool, DataType, ReduceOp) { return true; },
       nullptr, &DeviceCollectives::ring_path},
      // NCCL does the on-host steps, so the type and op must be NCCL's; integer avg would divide
      // once per level. The host step needs the same number of ranks on every host.
      {DeviceAllreduce::kHier, false,
       [](const Context& ctx, bool nccl_reduces, DataType type, ReduceOp op) {
         return nccl_reduces && !(op == ReduceOp::kAvg && !is_floating(type)) &&
                ctx.host_of_rank.size() == static_cast<size_t>(ctx.size) &&
                hierarchy_of(ctx.host_of_rank, ctx.rank).uniform;
       },
       nullptr, &DeviceCollectives::hierarchical_allreduce},
  };
  return kPaths;
}

const DeviceCollectives::Path& DeviceCollectives::path_for(device::NcclComm& comm, Context& ctx,
                                                           const DeviceCall& call, DataType type,
                                                           ReduceOp op) const {
  const bool nccl_reduces = comm.supports(type, op);
  const DeviceAllreduce configured = call.options->device_allreduce;
  for (const Path& p : paths()) {
    if (configured == DeviceAllreduce::kAuto) {
      if (p.in_auto && p.takes(ctx, nccl_reduces, type, op)) return p;
      continue;
    }
    if (p.id != configured) continue;
    if (p.takes(ctx, nccl_reduces, type, op)) return p;
    if (p.refusal != nullptr)
      throw make_error(ErrorCode::kInvalidArgument,
                       "allreduce on rank {}: TUTTI_DEVICE_ALLREDUCE={}, but {} {} with {}; use "
                       "TUTTI_DEVICE_ALLREDUCE=auto or ring",
                       rank_, path_name(p.id), p.refusal, to_string(type), to_string(op));
    break;  // every rank decides alike: the ring runs it
  }
  for (const Path& p : paths())
    if (p.id == DeviceAllreduce::kRing) return p;
  throw make_error(ErrorCode::kInternal, "the device paths' table lacks the ring");
}

void DeviceCollectives::nccl_allreduce(Context& ctx, const DeviceCall& call, const void* send,
                                       void* recv, size_t count, DataType type, ReduceOp op,
                                       const std::string&) {
  device::NcclComm& comm = nccl(ctx);
  // Sum and avg on floating types fold prescale, postscale and avg's 1/size into one pre-multiply
  // (ncclRedOpCreatePreMulSum): one pass, exact where the factors are powers of two.
  if (is_floating(type) && (op == ReduceOp::kSum || op == ReduceOp::kAvg)) {
    double scale = call.prescale * call.postscale;
    if (op == ReduceOp::kAvg) scale /= size_;
    comm.all_reduce(send, recv, count, type, ReduceOp::kSum, scale, stream_.id());
    return;
  }
  comm.all_reduce(send, recv, count, type, op, 1.0, stream_.id());
}

void DeviceCollectives::ring_path(Context& ctx, const DeviceCall& call, const void* send,
                                  void* recv, size_t count, DataType type, ReduceOp op,
                                  const std::string&) {
  ring_allreduce(ctx, nccl(ctx), call, send, recv, count, type, op);
}

void DeviceCollectives::allreduce(Context& ctx, const DeviceCall& call, const void* send,
                                  void* recv, size_t count, DataType type, ReduceOp op) {
  // The host path's argument checks (null buffers, counts whose bytes overflow): NCCL would read
  // past the buffers instead of refusing.
  check_buffers(ctx, "device allreduce", send, recv, count, type);
  // The signature carries the configured path (TUTTI_DEVICE_ALLREDUCE): the path taken follows
  // from it, the type and op, NCCL's abilities and the placement, which every rank shares.
  agree(ctx, call,
        static_cast<uint8_t>(kDeviceAlgorithmBase +
                             static_cast<int>(call.options->device_allreduce)));
  if (count == 0) return;
  if (size_ == 1) {
    // TUTTI_DEVICE_ALLREDUCE=nccl still refuses what NCCL cannot reduce, as at any size.
    if (call.options->device_allreduce == DeviceAllreduce::kNccl)
      (void)path_for(nccl(ctx), ctx, call, type, op);
    allreduce_alone(call.caller_stream, call, send, recv, count, type, op);
    return;
  }
  const std::string what =
      fmt::format("device allreduce of {} x {} ({})", count, to_string(type), to_string(op));
  const Path& path = path_for(nccl(ctx), ctx, call, type, op);
  log::trace("rank {}: {} takes the {} path", rank_, what, path_name(path.id));
  begin_on_stream(call);
  (this->*path.run)(ctx, call, send, recv, count, type, op, what);
  finish_on_stream(ctx, call, what);
}

void DeviceCollectives::allreduce_segments(Context& ctx, const DeviceCall& call,
                                           std::span<const Segment> segments, DataType type,
                                           ReduceOp op) {
  size_t count = 0;
  for (const Segment& s : segments) count += s.count;
  const std::string what = fmt::format("device allreduce of {} tensors, {} x {} ({})",
                                       segments.size(), count, to_string(type), to_string(op));
  agree(ctx, call,
        static_cast<uint8_t>(kDeviceAlgorithmBase +
                             static_cast<int>(call.options->device_allreduce)));
  if (count == 0) return;
  const Path& path = path_for(nccl(ctx), ctx, call, type, op);
  const size_t element = element_size(type);
  // Slot 2 (the ring uses 0 and 1), kept between calls: growing it is the only allocation.
  auto* base = static_cast<std::byte*>(scratch(ctx, call, kFusionSlot, count * element));
  device::DeviceApi& api = device::api();
  begin_on_stream(call);
  size_t offset = 0;
  for (const Segment& s : segments) {
    if (s.count > 0) api.copy_async(base + offset, s.send, s.count * element, stream_.id());
    offset += s.count * element;
  }
  (this->*path.run)(ctx, call, base, base, count, type, op, what);
  offset = 0;
  for (const Segment& s : segments) {
    if (s.count > 0) api.copy_async(s.recv, base + offset, s.count * element, stream_.id());
    offset += s.count * element;
  }
  finish_on_stream(ctx, call, what);
}

void DeviceCollectives::broadcast(Context& ctx, const DeviceCall& call, void* buf, size_t count,
                                  DataType type, int root) {
  const std::string what =
      fmt::format("device broadcast of {} x {} from rank {}", count, to_string(type), root);
  check_buffers(ctx, "device broadcast", buf, buf, count, type);
  agree(ctx, call, kNoPath);
  if (count == 0) return;
  device::NcclComm& comm = nccl(ctx);
  begin_on_stream(call);
  comm.broadcast(buf, buf, count, type, root, stream_.id());
  finish_on_stream(ctx, call, what);
}

void DeviceCollectives::allgather(Context& ctx, const DeviceCall& call, const void* send,
                                  void* recv, size_t count, DataType type) {
  const std::string what = fmt::format("device allgather of {} x {}", count, to_string(type));
  check_buffers(ctx, "device allgather", send, recv, count, type, static_cast<size_t>(size_));
  agree(ctx, call, kNoPath);
  if (count == 0) return;
  device::NcclComm& comm = nccl(ctx);
  begin_on_stream(call);
  comm.all_gather(send, recv, count, type, stream_.id());
  finish_on_stream(ctx, call, what);
}

void DeviceCollectives::reduce_scatter(Context& ctx, const DeviceCall& call, const void* send,
                                       void* recv, size_t recv_count, DataType type, ReduceOp op) {
  const std::string what = fmt::format("device reduce_scatter of {} x {} ({}) per rank", recv_count,
                                       to_string(type), to_string(op));
  check_buffers(ctx, "device reduce_scatter", send, recv, recv_count, type,
                static_cast<size_t>(size_));
  agree(ctx, call, kNoPath);
  if (recv_count == 0) return;
  device::NcclComm& comm = nccl(ctx);
  if (!comm.supports(type, op))  // alike on every rank: all refuse, nothing was enqueued
    throw make_error(ErrorCode::kInvalidArgument,
                     "reduce_scatter on rank {}: NCCL cannot reduce {} with {} on device "
                     "buffers; use allreduce (TUTTI_DEVICE_ALLREDUCE=ring reduces every type and "
                     "op) or host buffers",
                     rank_, to_string(type), to_string(op));
  begin_on_stream(call);
  if (is_floating(type) && op == ReduceOp::kAvg)
    comm.reduce_scatter(send, recv, recv_count, type, ReduceOp::kSum, 1.0 / size_, stream_.id());
  else
    comm.reduce_scatter(send, recv, recv_count, type, op, 1.0, stream_.id());
  finish_on_stream(ctx, call, what);
}

}  // namespace tutti::collectives
