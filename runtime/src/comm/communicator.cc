#include "comm/communicator.hpp"

#include <cmath>
#include <new>
#include <string>
#include <vector>

#include "core/buffer_overlap.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "transport/mesh.hpp"

namespace tutti::comm {

transport::CallSignature signature(transport::CallKind kind, size_t count, DataType type, int op,
                                   int root) {
  return {.kind = kind,
          .dtype = static_cast<int8_t>(type),
          .op = static_cast<int8_t>(op),
          .root = root,
          .count = count};
}

Communicator::Communicator(Key, std::shared_ptr<Job> job, transport::ContextId context,
                           std::vector<int> members, int rank, const Options& options)
    : job_(std::move(job)),
      context_(context),
      members_(std::move(members)),
      rank_(rank),
      size_(static_cast<int>(members_.size())),
      options_(options) {}

Communicator::~Communicator() = default;

const std::shared_ptr<void>& Communicator::attachment(
    const std::function<std::shared_ptr<void>()>& make) {
  // Every asynchronous call looks its engine up here: once made, without the lock.
  if (attached_.load(std::memory_order_acquire)) return attachment_;
  std::lock_guard lock(attachment_mutex_);
  if (!attachment_) {
    attachment_ = make();
    attached_.store(true, std::memory_order_release);
  }
  return attachment_;
}

std::shared_ptr<void> Communicator::attachment_if_any() {
  std::lock_guard lock(attachment_mutex_);
  return attachment_;
}

std::shared_ptr<Communicator> Communicator::make(std::shared_ptr<Job> job,
                                                 transport::ContextId context,
                                                 std::vector<int> members, const Options& options,
                                                 Deadline deadline) {
  const int self_fabric = job->fabric->rank();
  int rank = -1;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i] == self_fabric) rank = static_cast<int>(i);
  if (rank < 0)
    throw make_error(ErrorCode::kInternal, "fabric rank {} is not a member of context {}",
                     self_fabric, context);
  std::vector<std::string> hosts;
  for (int member : members) hosts.push_back(job->host_ids[member]);

  auto c = std::make_shared<Communicator>(Key{}, job, context, members, rank, options);
  c->topology_ = topology_from_hosts(hosts, rank);
  c->host_of_rank_ = host_index_of_ranks(hosts);
  int host_cpus = 0;  // this rank's host's, for the window's waits
  if (job->node_cpus.size() == job->host_ids.size()) {
    std::vector<bootstrap::NodeCpus> cpus;
    for (int member : c->members_) cpus.push_back(job->node_cpus[static_cast<size_t>(member)]);
    const std::vector<int> cpus_of_host = host_cpus_of_ranks(c->host_of_rank_, cpus);
    c->cpu_share_ = cpu_share_of_ranks(c->host_of_rank_, cpus, cpus_of_host);
    host_cpus = cpus_of_host.at(static_cast<size_t>(c->host_of_rank_[static_cast<size_t>(rank)]));
  }
  c->transport_ = job->fabric->make_transport(context, c->members_, rank);
  auto settings = std::make_shared<collectives::Settings>();
  settings->options = options;
  settings->model = std::make_shared<const collectives::CostModel>(
      collectives::CostModel::configured(options.segment_bytes, options.tune_file));
  c->settings_ = std::move(settings);
  // What every call shares, made once here; each call adds its own (run()).
  c->group_.emplace(collectives::Group{
      *c->transport_, rank, c->size_, options.segment_bytes, c->scratch_, c->host_of_rank_,
      &c->selection_, c->settings_.get(), options.tcp_segment_max_bytes, c->cpu_share_});

  transport::MeshConfig mesh;
  mesh.rank = rank;
  mesh.size = c->size_;
  mesh.host_ids = hosts;
  // Store keys and /dev/shm names of the window are the communicator's own.
  mesh.job_id = context == 0 ? job->job_id : fmt::format("{}-c{}", job->job_id, context);
  mesh.job_token = job->job_token;
  mesh.options = options;
  mesh.shm_window_required = context == 0;
  mesh.host_cpus = host_cpus;
  if (context == 0) {
    transport::attach_local_window(mesh, *c->transport_, *job->store, deadline);
  } else {
    // Many communicators may share a host's memory; each maps its window (and pays for it in
    // /dev/shm) only once it runs a collective that may use it.
    std::weak_ptr<Job> weak = job;
    c->transport_->defer_local_window(
        [mesh, weak, timeout = options.init_timeout](transport::Transport& transport) {
          if (auto job = weak.lock())
            transport::attach_local_window(mesh, transport, *job->store,
                                           Deadline::after(timeout).earlier(CallScope::deadline()));
        });
  }

  c->job_->watch_calls(StallWatch::Watched{c->progress_, context, rank, hosts},
                       options.stall_report);
  c->transport_->set_interrupt(c->interrupt_->flag(),
                               [interrupt = c->interrupt_] { return interrupt->error(); });
  job->watch(c->interrupt_);
  return c;
}

void Communicator::abort(const std::string& reason) {
  interrupt_->raise(make_error(ErrorCode::kAborted, "rank {} aborted the communicator: {}", rank_,
                               reason.empty() ? "(no reason given)" : reason));
  // Pending NCCL work never looks at our flag: end it (ncclCommAbort).
  if (auto device = device_if_any()) device->abort();
  deliver_abort_if_idle();
}

Error Communicator::with_timeout_setting(const Error& e) const {
  static constexpr std::string_view kDefault = "TUTTI_COLLECTIVE_TIMEOUT";
  if (e.code() != ErrorCode::kTimeout || options_.timeout_setting == kDefault) return e;
  std::string text = e.what();
  for (size_t at = text.find(kDefault); at != std::string::npos;
       at = text.find(kDefault, at + options_.timeout_setting.size()))
    text.replace(at, kDefault.size(), options_.timeout_setting);
  return Error(e.code(), text);
}

void Communicator::abort_for_second_thread(std::string_view name) {
  abort(
      fmt::format("a second thread called {} while another call ran on this communicator; "
                  "calls on one communicator must come from one thread at a time (give each "
                  "thread its own communicator: dup)",
                  name));
}

Error Communicator::second_thread_error(std::string_view name) const {
  if (interrupt_->raised()) return interrupt_->error();
  return make_error(ErrorCode::kAborted,
                    "rank {} aborted the communicator: a second thread called it while {} ran on "
                    "it; calls on one communicator must come from one thread at a time (give each "
                    "thread its own communicator: dup)",
                    rank_, name);
}

void Communicator::deliver_abort_if_idle() {
  if (!interrupt_->raised()) return;
  // A call in progress sees the interrupt in its wait and fails the communicator itself; only when
  // none is running does the aborting thread tell the peers.
  if (!busy_.enter_if_idle()) return;
  if (!failure_) fail(interrupt_->error(), "", 0);
  busy_.leave();
  // A call may have started and ended between the check and here without seeing the flag: then
  // failure_ is set by the line above, which is all it takes.
}

void Communicator::fail(const Error& error, std::string_view name, uint64_t sequence) {
  std::string reason = name.empty() ? std::string(error.what())
                                    : fmt::format("rank {} failed in {} (collective #{}): {}",
                                                  rank_, name, sequence, error.what());
  if (!abort_delivered_.exchange(true)) transport_->abort_all(reason, error.code());
  failure_.emplace(error.code(), reason);
  // Device calls that returned once enqueued may still wait in NCCL for peers that will not come:
  // a broken communicator ends them (ncclCommAbort), as abort() does.
  if (auto device = device_if_any()) device->abort();
}

void Communicator::check_scales(const CallOptions& call) const {
  if (!std::isfinite(call.prescale) || !std::isfinite(call.postscale))
    throw make_error(ErrorCode::kInvalidArgument,
                     "allreduce on rank {}: prescale {} and postscale {} must be finite numbers",
                     rank_, call.prescale, call.postscale);
}

void Communicator::allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                             const CallOptions& call) {
  refuse_overlap("allreduce", rank_, ByteRange::of(send, count, type),
                 ByteRange::of(recv, count, type), send == recv,
                 "the same buffer as send and recv (in place)");
  check_scales(call);
  const auto device = device_of("allreduce", {send, recv});
  if (device) check_device_scales("allreduce", type, op, call);
  const auto algorithm = call.algorithm.value_or(options_.algorithm);
  run("allreduce",
      signature(transport::CallKind::kAllreduce, count, type, static_cast<int>(op), -1), call,
      [&](collectives::Context& ctx) {
        const collectives::DeviceCall on_device =
            device ? device_call(call) : collectives::DeviceCall{};
        on_buffers(ctx, device, on_device, call);
        collectives::allreduce(ctx, algorithm, send, recv, count, type, op);
      });
}

void Communicator::on_buffers(collectives::Context& ctx, std::optional<int> device,
                              const collectives::DeviceCall& on_device, const CallOptions& call) {
  if (device) {
    // The registry's device entry takes the call (collectives/allreduce_registry.hpp).
    ctx.device = &device_collectives(*device);
    ctx.device_call = &on_device;
  } else {
    ctx.prescale = call.prescale;
    ctx.postscale = call.postscale;
  }
}

collectives::SegmentsRun Communicator::allreduce_segments(
    std::span<const collectives::Segment> segments, DataType type, ReduceOp op,
    const CallOptions& call, std::vector<std::byte>& pack) {
  check_scales(call);
  size_t count = 0;
  std::optional<int> device;
  for (const auto& s : segments) {
    count += s.count;
    // One look per buffer. Host segments among device ones (a joined rank's identities) are
    // copied into the device fusion buffer like the rest.
    if (auto d = device_of("allreduce", {s.send, s.recv})) {
      if (device && *device != *d)
        throw make_error(ErrorCode::kInvalidArgument,
                         "allreduce on rank {}: fused tensors on devices {} and {}; use one "
                         "device per communicator",
                         rank_, *device, *d);
      device = d;
    }
  }
  if (device) check_device_scales("allreduce", type, op, call);
  const auto algorithm = call.algorithm.value_or(options_.algorithm);
  collectives::SegmentsRun result;
  run("allreduce",
      signature(transport::CallKind::kAllreduce, count, type, static_cast<int>(op), -1), call,
      [&](collectives::Context& ctx) {
        const collectives::DeviceCall on_device =
            device ? device_call(call) : collectives::DeviceCall{};
        on_buffers(ctx, device, on_device, call);
        result = collectives::allreduce_segments(ctx, algorithm, segments, type, op, pack);
      });
  return result;
}

void Communicator::broadcast(void* buf, size_t count, DataType type, int root,
                             const CallOptions& call) {
  if (const auto device = device_of("broadcast", {buf})) {
    run("broadcast", signature(transport::CallKind::kBroadcast, count, type, -1, root), call,
        [&](collectives::Context& ctx) {
          if (root < 0 || root >= size_)
            throw make_error(ErrorCode::kInvalidArgument,
                             "broadcast on rank {}: root {} is not a rank (size {})", rank_, root,
                             size_);
          device_collectives(*device).broadcast(ctx, device_call(call), buf, count, type, root);
        });
    return;
  }
  run("broadcast", signature(transport::CallKind::kBroadcast, count, type, -1, root), call,
      [&](collectives::Context& ctx) { collectives::broadcast(ctx, buf, count, type, root); });
}

void Communicator::allgather(const void* send, void* recv, size_t count, DataType type,
                             const CallOptions& call) {
  const auto size = static_cast<size_t>(size_);
  refuse_overlap("allgather", rank_, ByteRange::of(send, count, type),
                 ByteRange::of(recv, count, type, size),
                 reinterpret_cast<uintptr_t>(send) ==
                     ByteRange::at(recv, static_cast<size_t>(rank_), count, type),
                 "send at this rank's block of recv (in place)");
  if (const auto device = device_of("allgather", {send, recv})) {
    run("allgather", signature(transport::CallKind::kAllgather, count, type, -1, -1), call,
        [&](collectives::Context& ctx) {
          device_collectives(*device).allgather(ctx, device_call(call), send, recv, count, type);
        });
    return;
  }
  run("allgather", signature(transport::CallKind::kAllgather, count, type, -1, -1), call,
      [&](collectives::Context& ctx) { collectives::allgather(ctx, send, recv, count, type); });
}

void Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type,
                                  ReduceOp op, const CallOptions& call) {
  const auto size = static_cast<size_t>(size_);
  refuse_overlap("reduce_scatter", rank_, ByteRange::of(send, recv_count, type, size),
                 ByteRange::of(recv, recv_count, type),
                 reinterpret_cast<uintptr_t>(recv) ==
                     ByteRange::at(send, static_cast<size_t>(rank_), recv_count, type),
                 "recv at this rank's block of send (in place)");
  if (const auto device = device_of("reduce_scatter", {send, recv})) {
    check_device_scales("reduce_scatter", type, op, {});
    run("reduce_scatter",
        signature(transport::CallKind::kReduceScatter, recv_count, type, static_cast<int>(op), -1),
        call, [&](collectives::Context& ctx) {
          device_collectives(*device).reduce_scatter(ctx, device_call(call), send, recv, recv_count,
                                                     type, op);
        });
    return;
  }
  run("reduce_scatter",
      signature(transport::CallKind::kReduceScatter, recv_count, type, static_cast<int>(op), -1),
      call, [&](collectives::Context& ctx) {
        collectives::reduce_scatter(ctx, send, recv, recv_count, type, op);
      });
}

void Communicator::barrier(const CallOptions& call) {
  run("barrier", {.kind = transport::CallKind::kBarrier}, call,
      [&](collectives::Context& ctx) { collectives::barrier(ctx); });
}

}  // namespace tutti::comm
