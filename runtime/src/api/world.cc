// The process-wide world: tutti::init()/finalize() and the public Communicator wrapper.
#include <exception>
#include <mutex>

#include "bootstrap/world_info.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "tutti/tutti.hpp"

namespace tutti {
namespace {

std::mutex g_mutex;
std::unique_ptr<Communicator> g_world;

}  // namespace

Communicator::Communicator(std::unique_ptr<comm::Communicator> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
int Communicator::local_rank() const { return impl_->topology().local_rank; }
int Communicator::local_size() const { return impl_->topology().local_size; }
int Communicator::cross_rank() const { return impl_->topology().cross_rank; }
int Communicator::cross_size() const { return impl_->topology().cross_size; }

void Communicator::allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op) {
  impl_->allreduce(send, recv, count, type, op);
}
void Communicator::broadcast(void* buf, size_t count, DataType type, int root) {
  impl_->broadcast(buf, count, type, root);
}
void Communicator::allgather(const void* send, void* recv, size_t count, DataType type) {
  impl_->allgather(send, recv, count, type);
}
void Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op) {
  impl_->reduce_scatter(send, recv, recv_count, type, op);
}
void Communicator::barrier() { impl_->barrier(); }

Communicator& init() {
  std::lock_guard lock(g_mutex);
  if (!g_world) {
    // Only tutti::Error leaves the API: an allocation or thread start that fails becomes kSystem.
    try {
      auto info = bootstrap::world_info_from_env();
      g_world = std::make_unique<Communicator>(comm::Communicator::create(info, comm::Settings::from_env()));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw make_error(ErrorCode::kSystem, "init failed: {}", e.what());
    }
  }
  return *g_world;
}

void finalize() {
  std::lock_guard lock(g_mutex);
  g_world.reset();
}

bool initialized() {
  std::lock_guard lock(g_mutex);
  return g_world != nullptr;
}

Communicator& world() {
  std::lock_guard lock(g_mutex);
  if (!g_world) throw make_error(ErrorCode::kNotInitialized, "tutti is not initialized: call tutti::init() first");
  return *g_world;
}

}  // namespace tutti
