// The process-wide world (tutti::init()/finalize()) and the public Communicator handle.
#include <atomic>
#include <exception>
#include <mutex>

#include "api/timeline_file.hpp"
#include "api/world_incarnation.hpp"
#include "bootstrap/world_info.hpp"
#include "comm/communicator.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "engine/timeline.hpp"
#include "tutti/tutti.hpp"

namespace tutti {
namespace {

std::mutex g_mutex;
std::unique_ptr<Communicator> g_world;
// Worlds finished so far in this process (finalize after init): the next init's incarnation, and
// what the C API's handles remember so that one kept past finalize is refused.
std::atomic<int> g_worlds_finished{0};
bool g_timeline_from_env = false;

// Only tutti::Error leaves the API: an allocation or thread start that fails becomes kSystem.
template <typename Body>
auto errors_as_tutti(std::string_view what, Body&& body) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw make_error(ErrorCode::kSystem, "{} failed: {}", what, e.what());
  }
}

}  // namespace

// api/async.cc: aborts the communicator's engine too, if it has one.
void abort_engine(comm::Communicator& c, const std::string& reason);

Communicator::Communicator(std::shared_ptr<comm::Communicator> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

comm::Communicator& Communicator::get() const {
  if (!impl_)
    throw make_error(ErrorCode::kInvalidArgument,
                     "this Communicator is null (a split with a negative color, or moved from)");
  return *impl_;
}

Communicator Communicator::create(std::shared_ptr<Store> store, int rank, int size,
                                  const Options& options) {
  return errors_as_tutti("Communicator::create", [&] {
    return Communicator(comm::Communicator::create(std::move(store), rank, size, options));
  });
}

int Communicator::rank() const {
  return get().rank();
}
int Communicator::size() const {
  return get().size();
}
int Communicator::local_rank() const {
  return get().topology().local_rank;
}
int Communicator::local_size() const {
  return get().topology().local_size;
}
int Communicator::cross_rank() const {
  return get().topology().cross_rank;
}
int Communicator::cross_size() const {
  return get().topology().cross_size;
}

Communicator Communicator::split(int color, int key) const {
  return errors_as_tutti("split", [&] { return Communicator(get().split(color, key)); });
}
Communicator Communicator::group(std::span<const int> ranks) const {
  return errors_as_tutti("group", [&] { return Communicator(get().group(ranks)); });
}
Communicator Communicator::dup() const {
  return errors_as_tutti("dup", [&] { return Communicator(get().dup()); });
}
Communicator Communicator::shrink() const {
  return errors_as_tutti("shrink", [&] { return Communicator(get().shrink()); });
}
int64_t Communicator::membership_epoch() const {
  return errors_as_tutti("membership_epoch", [&] { return get().membership_epoch(); });
}
Communicator Communicator::regroup(int64_t epoch) const {
  return errors_as_tutti("regroup", [&] { return Communicator(get().regroup(epoch)); });
}
void Communicator::abort(const std::string& reason) const {
  get().abort(reason);
  abort_engine(get(), reason);
}

bool Communicator::device_done() const {
  return get().settle_device(/*block=*/false);
}
void Communicator::device_wait() const {
  get().settle_device(/*block=*/true);
}

void Communicator::allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                             const CallOptions& call) const {
  get().allreduce(send, recv, count, type, op, call);
}
void Communicator::broadcast(void* buf, size_t count, DataType type, int root,
                             const CallOptions& call) const {
  get().broadcast(buf, count, type, root, call);
}
void Communicator::allgather(const void* send, void* recv, size_t count, DataType type,
                             const CallOptions& call) const {
  get().allgather(send, recv, count, type, call);
}
void Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type,
                                  ReduceOp op, const CallOptions& call) const {
  get().reduce_scatter(send, recv, recv_count, type, op, call);
}
void Communicator::barrier(const CallOptions& call) const {
  get().barrier(call);
}
void Communicator::reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                          int root, const CallOptions& call) const {
  get().reduce(send, recv, count, type, op, root, call);
}
void Communicator::gather(const void* send, void* recv, size_t count, DataType type, int root,
                          const CallOptions& call) const {
  get().gather(send, recv, count, type, root, call);
}
void Communicator::gatherv(const void* send, void* recv, std::span<const size_t> counts,
                           DataType type, int root, const CallOptions& call) const {
  get().gatherv(send, recv, counts, type, root, call);
}
void Communicator::scatter(const void* send, void* recv, size_t count, DataType type, int root,
                           const CallOptions& call) const {
  get().scatter(send, recv, count, type, root, call);
}
void Communicator::scatterv(const void* send, void* recv, std::span<const size_t> counts,
                            DataType type, int root, const CallOptions& call) const {
  get().scatterv(send, recv, counts, type, root, call);
}
void Communicator::allgatherv(const void* send, void* recv, std::span<const size_t> counts,
                              DataType type, const CallOptions& call) const {
  get().allgatherv(send, recv, counts, type, call);
}
void Communicator::reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts,
                                   DataType type, ReduceOp op, const CallOptions& call) const {
  get().reduce_scatterv(send, recv, counts, type, op, call);
}
void Communicator::alltoall(const void* send, void* recv, size_t count, DataType type,
                            const CallOptions& call) const {
  get().alltoall(send, recv, count, type, call);
}
void Communicator::alltoallv(const void* send, std::span<const size_t> send_counts, void* recv,
                             std::span<const size_t> recv_counts, DataType type,
                             const CallOptions& call) const {
  get().alltoallv(send, send_counts, recv, recv_counts, type, call);
}

Request Communicator::isend(const void* buf, size_t count, DataType type, int peer, int tag) const {
  return Request(std::make_unique<comm::Request>(get().isend(buf, count, type, peer, tag)));
}
Request Communicator::irecv(void* buf, size_t count, DataType type, int peer, int tag) const {
  return Request(std::make_unique<comm::Request>(get().irecv(buf, count, type, peer, tag)));
}
void Communicator::send(const void* buf, size_t count, DataType type, int peer, int tag,
                        const CallOptions& call) const {
  get().send(buf, count, type, peer, tag, call);
}
void Communicator::recv(void* buf, size_t count, DataType type, int peer, int tag,
                        const CallOptions& call) const {
  get().recv(buf, count, type, peer, tag, call);
}

Request::Request() = default;
Request::Request(std::unique_ptr<comm::Request> impl) : impl_(std::move(impl)) {}
Request::~Request() = default;
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;
bool Request::test() {
  return !impl_ || impl_->test();
}
void Request::wait(std::optional<std::chrono::milliseconds> timeout) {
  if (impl_) impl_->wait(timeout);
}

Communicator& init() {
  std::lock_guard lock(g_mutex);
  if (!g_world) {
    errors_as_tutti("init", [] {
      auto info = bootstrap::world_info_from_env();
      g_world = std::make_unique<Communicator>(
          comm::Communicator::create(info, Options::from_env(), g_worlds_finished.load()));
      return 0;
    });
    if (auto path = env::raw("TUTTI_TIMELINE")) {
      try {
        engine::Timeline::instance().start(timeline_file(*path, g_world->rank(), g_world->size()));
      } catch (const Error& e) {
        g_world.reset();
        throw make_error(ErrorCode::kConfig, "TUTTI_TIMELINE: {}", e.what());
      }
      g_timeline_from_env = true;
    }
  }
  return *g_world;
}

void finalize() {
  std::unique_ptr<Communicator> world;
  {
    std::lock_guard lock(g_mutex);
    world = std::move(g_world);
  }
  // The world's engine (if any) shuts down with it, collectively, outside the lock: another
  // thread's initialized() must not wait for the other ranks.
  if (world) ++g_worlds_finished;
  world.reset();
  std::lock_guard lock(g_mutex);
  if (g_timeline_from_env) stop_timeline();
  g_timeline_from_env = false;
}

int world_incarnation() {
  return g_worlds_finished.load();
}

bool initialized() {
  std::lock_guard lock(g_mutex);
  return g_world != nullptr;
}

Communicator& world() {
  std::lock_guard lock(g_mutex);
  if (!g_world)
    throw make_error(ErrorCode::kNotInitialized,
                     "tutti is not initialized: call tutti::init() first");
  return *g_world;
}

}  // namespace tutti
