// HostDeviceApi: a host-memory stand-in for the device runtime (device/device_api.hpp).
//
// It is the one fake the project allows: this machine has no GPU, and the device path's own
// logic (which buffer goes where, stream and event ordering, the host wait, deadlines, abort,
// splits) must still be tested with real processes. A stand-in kinder than the hardware hides
// bugs (the first one ran everything at once and passed what an H100 then failed), so where a GPU
// is unkind this one is too:
// - work runs later: every operation waits a seeded random delay on its stream's thread before
//   it runs (TUTTI_FAKE_DEVICE_DELAY_US, the longest, default 200; 0 turns it off;
//   TUTTI_FAKE_DEVICE_SEED, printed at start, repeats a run's delays);
// - what an operation will write is poisoned (0xA5 bytes) when it is enqueued, unless an earlier
//   operation still pending touches those bytes: a host read that did not wait for the operation
//   sees garbage, not the old (often equal) contents;
// - memcpy_legacy() is a plain cudaMemcpy from pageable host memory: it returns once the bytes
//   are staged, and the copy into device memory happens later on the legacy default stream, which
//   a non-blocking stream is not ordered after;
// - the host has TUTTI_FAKE_DEVICES devices (default 1, as the lent GPU hosts); NCCL refuses two
//   ranks of one communicator on the same device of the same host (NCCL_HOSTID, else the host
//   name), as NCCL's "Duplicate GPU detected" does, on every rank;
// - reduce_async refuses (at enqueue, kInvalidArgument) exactly what the CUDA kernels refuse
//   (reduce::validate), and an NCCL init or split takes a random while before it completes.
// Besides, it mimics what the device path relies on:
// - "device memory" is host memory it hands out and registers, so locate() says "device" for it
//   and "host" for anything else (except on its stream threads, see below);
// - a stream is one worker thread running the closures enqueued on it in FIFO order, so work
//   enqueued on the wrong stream, or not ordered by events, shows as wrong results;
// - an event is a generation counter: record() enqueues the marker, query() looks, wait()
//   enqueues a closure that blocks its stream until the marker ran;
// - reduce_async is the CPU reduce loops of reduce/;
// - an NCCL communicator is a real tutti host Communicator among the test's processes (made
//   through the job's store under a name derived from the unique id); its operations run on the
//   stream they were enqueued on. On a stream thread locate() says "host" for everything, so that
//   Communicator takes its host path with the "device" buffers;
// - fault injection: an NCCL operation that never completes until its communicator is aborted,
//   and one that fails with an asynchronous error; TUTTI_FAKE_DEVICE_DROP_WAITS=1 makes every
//   wait(stream, event) a no-op, the ordering bug the stream-ordered tests must catch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device/device_api.hpp"
#include "tutti/store.hpp"

namespace tutti::testing {

// What the device path did, for the tests' dispatch checks.
struct DeviceCounters {
  std::atomic<int> streams{0};      // created (the test's own included)
  std::atomic<int> nccl_inits{0};   // NCCL communicators made by nccl_init
  std::atomic<int> nccl_splits{0};  // ... and by split
  std::atomic<int> nccl_ops{0};     // collective and point-to-point operations enqueued
  std::atomic<int> all_reduces{0};  // ... of which ncclAllReduce
  std::atomic<int> reduce_scatters{0};
  std::atomic<int> all_gathers{0};
  std::atomic<int> p2p_groups{0};      // grouped sends and receives
  std::atomic<int> copies{0};          // copy_async calls
  std::atomic<int> aborts{0};          // ncclCommAbort calls
  std::atomic<int> device_locates{0};  // locate() answers "device"
};

class HostDeviceApi final : public device::DeviceApi {
 public:
  // `store`: where the stand-in's NCCL communicators meet (the job's store).
  explicit HostDeviceApi(std::shared_ptr<Store> store);
  ~HostDeviceApi() override;

  // cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) from pageable memory: `src` may be reused
  // when it returns, but `dst` holds the bytes only once the legacy default stream ran the copy.
  void memcpy_legacy(void* dst, const void* src, size_t bytes);
  // cudaStreamSynchronize: returns once everything enqueued on `stream` so far ran.
  void synchronize(device::StreamId stream);
  // The byte every pending write's destination holds until it runs.
  static constexpr std::byte kPoison{0xA5};

  DeviceCounters& counters() { return counters_; }
  // The next NCCL operation of this process never completes until its communicator is aborted;
  // with `async_error`, that communicator's async_error() says it from then on.
  void inject_hang(std::string async_error = "");
  // Runs `work` on `stream` in its order (the test's "kernel": a slow write, say).
  void enqueue(device::StreamId stream, std::function<void()> work);

  std::string_view name() const override { return "host stand-in"; }
  int device_count() override { return devices_; }
  device::PointerInfo locate(const void* p) override;
  void set_device(int device) override;
  int current_device() override;
  device::StreamId create_stream(int device) override;
  void destroy_stream(device::StreamId stream) noexcept override;
  device::EventId create_event(int device) override;
  void destroy_event(device::EventId event) noexcept override;
  void record(device::EventId event, device::StreamId stream) override;
  void wait(device::StreamId stream, device::EventId event) override;
  bool query(device::EventId event) override;
  void* alloc(size_t bytes, int device) override;
  void free(void* p) noexcept override;
  void* alloc_host(size_t bytes) override;
  void free_host(void* p) noexcept override;
  void copy_async(void* dst, const void* src, size_t bytes, device::StreamId stream) override;
  void reduce_async(const device::ReduceArgs& args, device::StreamId stream) override;
  device::UniqueId nccl_unique_id() override;
  std::unique_ptr<device::NcclComm> nccl_init(const device::UniqueId& id, int nranks, int rank,
                                              int device,
                                              std::chrono::milliseconds timeout) override;

  class Worker;
  struct EventState;
  class Comm;

 private:
  Worker& worker(device::StreamId stream);
  // A byte range an operation reads or writes.
  struct Range {
    const std::byte* begin;
    size_t bytes;
    bool overlaps(const Range& o) const {
      return bytes > 0 && o.bytes > 0 && begin < o.begin + o.bytes && o.begin < begin + bytes;
    }
  };
  // Enqueues `work` on `stream` after a random delay; poisons `writes` now where no pending
  // operation touches them; `reads` and `writes` count as pending until `work` ran.
  void submit(device::StreamId stream, std::vector<Range> reads, std::vector<Range> writes,
              std::function<void()> work);
  std::chrono::microseconds draw_delay();
  // Blocks until every stream ran everything enqueued so far (cudaFree synchronizes too).
  void drain_all();
  // Takes the pending injection, if any, for an NCCL operation being enqueued.
  bool take_injection(std::string& async_error);

  std::shared_ptr<Store> store_;
  DeviceCounters counters_;
  std::mutex mutex_;
  std::map<const std::byte*, std::unique_ptr<std::byte[]>> device_memory_;  // by start
  std::map<const std::byte*, std::pair<size_t, int>> device_sizes_;         // bytes, device
  std::map<const std::byte*, std::unique_ptr<std::byte[]>> host_memory_;
  std::map<Worker*, std::unique_ptr<Worker>> workers_;
  std::map<EventState*, std::unique_ptr<EventState>> events_;
  std::unique_ptr<Worker> default_stream_;  // the legacy default stream (null StreamId)
  bool hang_next_ = false;
  bool drop_waits_ = false;  // TUTTI_FAKE_DEVICE_DROP_WAITS
  std::string hang_error_;
  uint64_t ids_drawn_ = 0;
  int devices_ = 1;
  std::chrono::microseconds longest_delay_{200};
  std::mt19937_64 random_;                  // under mutex_
  std::multimap<uint64_t, Range> pending_;  // operation id -> a range it touches; under mutex_
  uint64_t next_operation_ = 0;             // under mutex_
};

}  // namespace tutti::testing
