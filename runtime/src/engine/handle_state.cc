#include "engine/handle_state.hpp"

#include <exception>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::engine {

HandleState::HandleState() = default;

bool HandleState::finished() const {
  return finished_.load(std::memory_order_acquire);
}

bool HandleState::wait(Deadline deadline, bool run_cycles) const {
  if (finished_.load(std::memory_order_acquire)) {
    if (error_) throw unshared(*error_);
    return true;
  }
  std::unique_lock lock(mutex_);
  if (!finished_ && on_engine_thread)
    throw Error(ErrorCode::kInvalidArgument,
                "waiting for an operation inside an engine completion callback would stop the "
                "engine that must finish it; chain another callback instead");
  if (!finished_ && run_cycles) {
    if (auto engine = runner.lock()) {
      lock.unlock();
      engine->run_cycles_until(*this, deadline);
      lock.lock();
    }
  }
  if (!cv_.wait_until(lock, deadline.at(), [&] { return finished_.load(); })) return false;
  if (error_) throw unshared(*error_);
  return true;
}

void HandleState::then(Callback callback) {
  std::unique_lock lock(mutex_);
  if (!finished_ || deferred_) {
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
    if (finished_.load(std::memory_order_relaxed)) return;
    error_ = std::move(error);
    finished_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  run(callbacks);
}

bool HandleState::finish_deferring_callbacks(std::optional<Error> error) {
  bool deferred = false;
  {
    std::lock_guard lock(mutex_);
    if (finished_.load(std::memory_order_relaxed)) return false;
    error_ = std::move(error);
    finished_.store(true, std::memory_order_release);
    deferred = deferred_ = !callbacks_.empty();
  }
  cv_.notify_all();
  return deferred;
}

void HandleState::run_deferred_callbacks() {
  // Callbacks given meanwhile (then() queues them while deferred_) run in this same pass.
  for (;;) {
    std::vector<Callback> callbacks;
    {
      std::lock_guard lock(mutex_);
      if (callbacks_.empty()) {
        deferred_ = false;
        return;
      }
      callbacks.swap(callbacks_);
    }
    run(callbacks);
  }
}

void HandleState::run(std::vector<Callback>& callbacks) const {
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
