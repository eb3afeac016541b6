#include "engine/handle_state.hpp"

#include <exception>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::engine {

bool HandleState::finished() const {
  std::lock_guard lock(mutex_);
  return finished_;
}

bool HandleState::wait(Deadline deadline) const {
  std::unique_lock lock(mutex_);
  if (!finished_ && on_engine_thread)
    throw Error(ErrorCode::kInvalidArgument,
                "waiting for an operation inside an engine completion callback would stop the "
                "engine that must finish it; chain another callback instead");
  if (!cv_.wait_until(lock, deadline.at(), [&] { return finished_; })) return false;
  if (error_) throw unshared(*error_);
  return true;
}

void HandleState::then(Callback callback) {
  std::unique_lock lock(mutex_);
  if (!finished_) {
    callbacks_.push_back(std::move(callback));
    return;
  }
  std::optional<Error> error;
  if (error_) error = unshared(*error_);
  lock.unlock();
  callback(error ? &*error : nullptr);
}

void HandleState::complete() {
  finish(std::nullopt);
}

void HandleState::fail(const Error& error) {
  finish(unshared(error));
}

void HandleState::finish(std::optional<Error> error) {
  std::vector<Callback> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    error_ = std::move(error);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  // A callback that throws must not take the engine down with it.
  for (auto& callback : callbacks) {
    try {
      callback(error_ ? &*error_ : nullptr);
    } catch (const std::exception& e) {
      log::error("an engine completion callback threw: {}", e.what());
    } catch (...) {
      log::error("an engine completion callback threw a non-standard exception");
    }
  }
}

}  // namespace tutti::engine
