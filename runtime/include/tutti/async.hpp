// The engine's public types (Horovod-style asynchronous named collectives; see
// Communicator::allreduce_async in tutti.hpp): the handle of one operation, its options and the
// readiness seam for device buffers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tutti/error.hpp"

#if defined(__GNUC__)
#define TUTTI_ASYNC_API __attribute__((visibility("default")))
#else
#define TUTTI_ASYNC_API
#endif

namespace tutti {

namespace engine {
class HandleState;
}

// When an enqueued buffer may be read. Host memory is ready at once (pass no ReadyEvent); a GPU
// tensor is ready once the event recorded after the kernel that produced it has completed. The
// engine polls ready() before it announces the tensor, so it never blocks on a buffer that is not
// ready and never synchronizes a device.
class TUTTI_ASYNC_API ReadyEvent {
 public:
  virtual ~ReadyEvent() = default;
  virtual bool ready() = 0;
};

// A ReadyEvent for GPU buffers written by work on `stream` (a cudaStream_t; null: the legacy
// default stream): an event recorded there now, on the calling thread's current device. Enqueue a
// GPU tensor with it right after the kernel that produced it. Without one, a device buffer's
// readiness is such an event on the legacy default stream. Error(kDevice) without CUDA or a device.
TUTTI_ASYNC_API std::shared_ptr<ReadyEvent> cuda_stream_ready(void* stream);

struct AsyncOptions {
  // allreduce with sum or avg on floating types: inputs are multiplied by prescale, the result by
  // postscale, inside the reduction (CallOptions has the same pair).
  double prescale = 1.0;
  double postscale = 1.0;
  std::shared_ptr<ReadyEvent> ready;  // null: host buffers are ready now (see cuda_stream_ready)
  // allgather and alltoall: also write the rows received from each rank here (one entry per
  // rank), before the handle finishes.
  size_t* rows_per_rank = nullptr;
  // join: also write the rank that joined last here, before the handle finishes.
  int* last_joined = nullptr;
};

// Counters of one communicator's engine (all zero before its first asynchronous call).
struct EngineStats {
  uint64_t cycles = 0;       // negotiation cycles
  uint64_t tensors = 0;      // operations completed
  uint64_t collectives = 0;  // data collectives run; a fused batch counts once
  uint64_t fused = 0;        // tensors that ran in a fused batch of two or more
  uint64_t cache_hits = 0;   // tensors negotiated by their response-cache bit alone
  uint64_t announced = 0;    // tensors this rank announced by name
  // Cycles that replayed the previous cycle's plan: the same names, in the same order, ready on
  // every rank, run without looking each up (docs/ARCHITECTURE.md, "Engine").
  uint64_t replayed = 0;
  uint64_t fusion_threshold = 0;  // in use now (TUTTI_FUSION_THRESHOLD, or what autotune chose)
  uint64_t cycle_time_us = 0;     // in use now (TUTTI_CYCLE_TIME, or what autotune chose)
  // Enqueues do not wake the engine thread now: waiting callers took the last bursts, and the
  // thread looks every 10 ms instead (docs/ARCHITECTURE.md, "Engine").
  bool standby = false;
};

// The handle of one asynchronous operation. Copies refer to the same operation. The buffers passed
// to it must stay valid and unchanged (send) until it finished.
class TUTTI_ASYNC_API Handle {
 public:
  Handle();
  explicit Handle(std::shared_ptr<engine::HandleState> state);
  ~Handle();
  Handle(const Handle&);
  Handle& operator=(const Handle&);
  Handle(Handle&&) noexcept;
  Handle& operator=(Handle&&) noexcept;

  explicit operator bool() const { return state_ != nullptr; }
  // True once the operation finished (completed or failed). Never blocks, never throws.
  bool poll() const;
  // Waits until it finished and throws its error if it failed. With a timeout, Error(kTimeout)
  // when it has not finished by then (it goes on: wait again or poll). The engine itself fails
  // an operation that cannot finish (TUTTI_STALL_TIMEOUT, a dead rank, a mismatch).
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
  // Calls `callback` once, when it finished, with nullptr or its error: at once on this thread if
  // it already has, else on the engine's thread (keep it short; never wait on a handle in it).
  // Several run in the order given.
  void then(std::function<void(const Error*)> callback) const;

  // allgather and alltoall without a receive buffer: the elements received, rank by rank.
  std::span<const std::byte> output() const;
  // allgather and alltoall: the rows received from each rank.
  std::vector<uint64_t> output_rows() const;
  // join: the rank that joined last.
  int last_joined() const;

 private:
  std::shared_ptr<engine::HandleState> state_;
};

// The engine timeline (Chrome trace JSON, one file per process): start writing `path` (the world
// rank replaces "{rank}"; without it, ".rank<N>" goes before the extension when the world has
// more than one rank), stop and close it. TUTTI_TIMELINE starts it at init.
TUTTI_ASYNC_API void start_timeline(const std::string& path);
TUTTI_ASYNC_API void stop_timeline();

}  // namespace tutti
