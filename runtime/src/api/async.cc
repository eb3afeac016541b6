// The engine's public surface: each communicator's engine is made at its first asynchronous call
// (a dup of it, so the engine's traffic never mixes with the caller's own calls) and lives as the
// communicator's attachment, shut down when its last handle goes.
#include <fmt/format.h>

#include <algorithm>

#include "api/device_ready.hpp"
#include "api/timeline_file.hpp"
#include "comm/communicator.hpp"
#include "core/buffer_overlap.hpp"
#include "core/error.hpp"
#include "engine/engine.hpp"
#include "engine/handle_state.hpp"
#include "engine/timeline.hpp"
#include "tutti/tutti.hpp"

namespace tutti {
namespace {

engine::EngineSettings settings_from(const Options& o) {
  engine::EngineSettings s{.options = o, .shutdown_timeout = o.timeout};
  // An idle rank must enter a cycle well within the collective timeout that its peers' cycle
  // collective waits for it.
  s.heartbeat = std::min(std::chrono::milliseconds(1000), o.timeout / 4);
  return s;
}

// The communicator keeps its engine as long as it lives (a reference, not a copy: every
// asynchronous call comes here).
engine::Engine& engine_of(comm::Communicator& c) {
  const std::shared_ptr<void>& any = c.attachment([&]() -> std::shared_ptr<void> {
    // The same words on every rank, so that a failure's message is identical everywhere.
    std::string label =
        c.context_id() == 0
            ? fmt::format("tutti engine (world, {} ranks)", c.size())
            : fmt::format("tutti engine (communicator c{}, {} ranks)", c.context_id(), c.size());
    try {
      return std::make_shared<engine::Engine>(c.dup(), settings_from(c.options()), label);
    } catch (const Error& e) {
      throw make_error(e.code(),
                       "setting up {} failed (the first asynchronous call on a communicator is "
                       "collective: every member must make one): {}",
                       label, e.what());
    }
  });
  return *static_cast<engine::Engine*>(any.get());
}

// The fields every operation has; each *_async sets what is its own.
engine::EnqueueRequest request_for(const std::string& name, engine::OpKind kind, DataType type,
                                   size_t count, const void* send, void* recv) {
  engine::EnqueueRequest q;
  q.name = name;
  q.spec.kind = kind;
  q.spec.type = type;
  q.spec.count = count;
  q.send = send;
  q.recv = recv;
  return q;
}

Handle submit(comm::Communicator& c, engine::EnqueueRequest request, const AsyncOptions& options) {
  request.spec.prescale = options.prescale;
  request.spec.postscale = options.postscale;
  request.ready =
      options.ready ? options.ready : api::ready_for(request.send, request.recv, nullptr);
  request.rows_out = options.rows_per_rank;
  return Handle(engine_of(c).enqueue(std::move(request)));
}

}  // namespace

Handle::Handle() = default;
Handle::Handle(std::shared_ptr<engine::HandleState> state) : state_(std::move(state)) {}
Handle::~Handle() = default;
Handle::Handle(const Handle&) = default;
Handle& Handle::operator=(const Handle&) = default;
Handle::Handle(Handle&&) noexcept = default;
Handle& Handle::operator=(Handle&&) noexcept = default;

namespace {
engine::HandleState& state_of(const std::shared_ptr<engine::HandleState>& s) {
  if (!s) throw Error(ErrorCode::kInvalidArgument, "this Handle is empty (default-made or moved)");
  return *s;
}
}  // namespace

bool Handle::poll() const {
  return state_ && state_->finished();
}

void Handle::wait(std::optional<std::chrono::milliseconds> timeout) const {
  engine::HandleState& s = state_of(state_);
  const auto limit = timeout ? Deadline::Clock::duration(*timeout) : s.wait_limit;
  // A finished handle needs no deadline (and no clock read: most handles of a step are finished
  // by the time they are waited for).
  const Deadline deadline = s.finished() ? Deadline::never() : Deadline::after(limit);
  // Without a timeout this thread would only sleep: it runs the engine's cycles meanwhile.
  if (!s.wait(deadline, !timeout))
    throw make_error(ErrorCode::kTimeout, "the operation has not finished after {} ms{}",
                     std::chrono::duration_cast<std::chrono::milliseconds>(limit).count(),
                     timeout ? " (it goes on: wait again or poll)" : "");
}

void Handle::then(std::function<void(const Error*)> callback) const {
  state_of(state_).then(std::move(callback));
}

std::span<const std::byte> Handle::output() const {
  return state_of(state_).output;
}
std::vector<uint64_t> Handle::output_rows() const {
  return state_of(state_).output_rows;
}
int Handle::last_joined() const {
  return state_of(state_).last_joined;
}

Handle Communicator::allreduce_async(const std::string& name, const void* send, void* recv,
                                     size_t count, DataType type, ReduceOp op,
                                     const AsyncOptions& options) const {
  comm::Communicator& c = get();
  // Refused before anything is enqueued: the engine would read the input after writing over it.
  refuse_overlap("allreduce_async", c.rank(), ByteRange::of(send, count, type),
                 ByteRange::of(recv, count, type), send == recv,
                 "the same buffer as send and recv (in place)");
  auto q = request_for(name, engine::OpKind::kAllreduce, type, count, send, recv);
  q.spec.op = op;
  return submit(c, std::move(q), options);
}

Handle Communicator::allgather_async(const std::string& name, const void* send, size_t rows,
                                     size_t row_count, DataType type, void* recv, size_t recv_count,
                                     const AsyncOptions& options) const {
  comm::Communicator& c = get();
  // Where this rank's rows land depends on the other ranks' row counts: there is no in-place
  // form, and no overlap is taken.
  refuse_overlap("allgather_async", c.rank(), ByteRange::of(send, row_count, type, rows),
                 ByteRange::of(recv, recv_count, type), false,
                 "let the engine allocate the result (no receive buffer: Handle::output())");
  auto q = request_for(name, engine::OpKind::kAllgather, type, row_count, send, recv);
  q.spec.rows = rows;
  q.recv_capacity = recv_count;
  return submit(c, std::move(q), options);
}

Handle Communicator::broadcast_async(const std::string& name, void* buf, size_t count,
                                     DataType type, int root, const AsyncOptions& options) const {
  auto q = request_for(name, engine::OpKind::kBroadcast, type, count, nullptr, buf);
  q.spec.root = root;
  return submit(get(), std::move(q), options);
}

Handle Communicator::reduce_scatter_async(const std::string& name, const void* send, void* recv,
                                          size_t recv_count, DataType type, ReduceOp op,
                                          const AsyncOptions& options) const {
  comm::Communicator& c = get();
  refuse_overlap("reduce_scatter_async", c.rank(),
                 ByteRange::of(send, recv_count, type, static_cast<size_t>(c.size())),
                 ByteRange::of(recv, recv_count, type),
                 reinterpret_cast<uintptr_t>(recv) ==
                     ByteRange::at(send, static_cast<size_t>(c.rank()), recv_count, type),
                 "recv at this rank's block of send (in place)");
  auto q = request_for(name, engine::OpKind::kReduceScatter, type, recv_count, send, recv);
  q.spec.op = op;
  return submit(c, std::move(q), options);
}

Handle Communicator::alltoall_async(const std::string& name, const void* send,
                                    std::span<const size_t> send_rows, size_t row_count,
                                    DataType type, void* recv, size_t recv_count,
                                    const AsyncOptions& options) const {
  comm::Communicator& c = get();
  // The layout of what arrives depends on the other ranks' rows: no in-place form.
  size_t sent_rows = 0;
  bool fits = true;  // else the engine refuses the rows itself
  for (size_t r : send_rows) fits = fits && !__builtin_add_overflow(sent_rows, r, &sent_rows);
  refuse_overlap("alltoall_async", c.rank(),
                 ByteRange::of(send, row_count, type, fits ? sent_rows : 0),
                 ByteRange::of(recv, recv_count, type), false,
                 "let the engine allocate the result (no receive buffer: Handle::output())");
  auto q = request_for(name, engine::OpKind::kAlltoall, type, row_count, send, recv);
  q.spec.splits.assign(send_rows.begin(), send_rows.end());
  q.recv_capacity = recv_count;
  return submit(c, std::move(q), options);
}

Handle Communicator::barrier_async() const {
  auto q = request_for("__tutti_barrier", engine::OpKind::kBarrier, DataType::kUInt8, 0, nullptr,
                       nullptr);
  return submit(get(), std::move(q), {});
}

Handle Communicator::join(const AsyncOptions& options) const {
  return Handle(engine_of(get()).join(options.last_joined));
}

void abort_engine(comm::Communicator& c, const std::string& reason) {
  if (auto any = c.attachment_if_any())
    std::static_pointer_cast<engine::Engine>(any)->abort(reason);
}

EngineStats Communicator::engine_stats() const {
  auto any = get().attachment_if_any();
  if (!any) return {};
  return std::static_pointer_cast<engine::Engine>(any)->stats();
}

std::string timeline_file(std::string file, int rank, int size) {
  if (auto at = file.find("{rank}"); at != std::string::npos) {
    file.replace(at, 6, std::to_string(rank));
  } else if (size > 1) {
    auto slash = file.rfind('/');
    auto dot = file.rfind('.');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    file.insert(has_ext ? dot : file.size(), fmt::format(".rank{}", rank));
  }
  return file;
}

void start_timeline(const std::string& path) {
  if (!initialized()) {
    engine::Timeline::instance().start(timeline_file(path, 0, 1));
    return;
  }
  engine::Timeline::instance().start(timeline_file(path, world().rank(), world().size()));
}

void stop_timeline() {
  engine::Timeline::instance().stop();
}

}  // namespace tutti
