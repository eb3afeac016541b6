// The seam between tutti's collectives and a GPU runtime: the few CUDA runtime and NCCL calls the
// device path needs, behind one interface, so that everything above it (which buffer goes where,
// stream ordering, deadlines, abort) is plain C++ that builds and is tested without CUDA.
//
// Three implementations exist:
// - device/cuda/ (built with TUTTI_WITH_CUDA): libcudart and libnccl;
// - device/device_api_without_cuda.cc: finds no device, so every buffer is host memory and a call
//   that needs a device fails with Error(kDevice) saying that this libtutti was built without CUDA;
// - a host-memory stand-in in the tests (the one fake the project allows: no GPU exists here).
//
// Every call that can fail throws Error(kDevice) naming the CUDA or NCCL call and its error string.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "reduce/device_reduce.hpp"
#include "tutti/types.hpp"

namespace tutti::device {

// The runtime's handles (cudaStream_t, cudaEvent_t), opaque above this layer. A null StreamId is
// the legacy default stream.
using StreamId = void*;
using EventId = void*;

struct PointerInfo {
  bool on_device = false;  // device or managed memory, read by the GPU
  int device = -1;         // its device when on_device
};

// ncclUniqueId's bytes: made by one rank, carried to the others by the host path.
using UniqueId = std::array<std::byte, 128>;

// The reduce kernel's arguments: out[i] = op(a[i] * scale_a, b[i] * scale_b) * post (never kAvg;
// scales only for sum on floating types; reduce/device_reduce.hpp).
using ReduceArgs = reduce::DeviceReduce;

// One NCCL communicator. Every data call enqueues its work on `stream` and returns at once; its
// completion is observed through an event recorded after it. Byte counts and element counts are
// as NCCL's.
class NcclComm {
 public:
  virtual ~NcclComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Whether NCCL reduces `type` with `op` itself (NCCL has no int16 and no bitwise ops; bool
  // travels as uint8, where max is or and min is and). kAvg counts as supported.
  virtual bool supports(DataType type, ReduceOp op) const = 0;
  // scale != 1 (sum or avg on floating types only): every input is multiplied by scale
  // (ncclRedOpCreatePreMulSum), which folds a prescale and a postscale into one factor.
  virtual void all_reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                          double scale, StreamId stream) = 0;
  virtual void reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type,
                              ReduceOp op, double scale, StreamId stream) = 0;
  virtual void all_gather(const void* send, void* recv, size_t send_count, DataType type,
                          StreamId stream) = 0;
  virtual void broadcast(const void* send, void* recv, size_t count, DataType type, int root,
                         StreamId stream) = 0;
  // Point-to-point, grouped between group_start and group_end so that a ring step's send and
  // receive progress together.
  virtual void group_start() = 0;
  virtual void group_end() = 0;
  virtual void send(const void* buf, size_t bytes, int peer, StreamId stream) = 0;
  virtual void recv(void* buf, size_t bytes, int peer, StreamId stream) = 0;
  // ncclCommGetAsyncError: "" while fine, else the NCCL error string (a peer died, a network
  // failure). Never throws.
  virtual std::string async_error() = 0;
  // ncclCommAbort: pending work ends and the communicator is unusable. From any thread, once or
  // more; never throws.
  virtual void abort() noexcept = 0;
  // ncclCommSplit, collective over this communicator: ranks with equal color form one, ordered
  // by key; a negative color joins none (null). Error(kTimeout) (after aborting) when the others
  // did not join within `timeout`.
  virtual std::unique_ptr<NcclComm> split(int color, int key,
                                          std::chrono::milliseconds timeout) = 0;
};

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  // "cuda", "none" (built without CUDA) or the stand-in's name, for messages.
  virtual std::string_view name() const = 0;
  // Usable devices; 0 without a driver or device. Never throws; cheap after the first call.
  virtual int device_count() = 0;
  // Where p points. Without a device every pointer is host memory (and no runtime call is made,
  // so the host path pays nothing). Never throws.
  virtual PointerInfo locate(const void* p) = 0;
  // The calling thread's current device (cudaSetDevice / cudaGetDevice).
  virtual void set_device(int device) = 0;
  virtual int current_device() = 0;

  virtual StreamId create_stream(int device) = 0;  // non-blocking with respect to stream 0
  virtual void destroy_stream(StreamId stream) noexcept = 0;
  virtual EventId create_event(int device) = 0;  // without timing
  virtual void destroy_event(EventId event) noexcept = 0;
  virtual void record(EventId event, StreamId stream) = 0;
  // `stream` runs nothing enqueued after this call until `event` completed; the host goes on.
  virtual void wait(StreamId stream, EventId event) = 0;
  // True once everything before the event's record completed; never blocks.
  virtual bool query(EventId event) = 0;

  virtual void* alloc(size_t bytes, int device) = 0;  // device memory
  virtual void free(void* p) noexcept = 0;
  virtual void* alloc_host(size_t bytes) = 0;  // pinned host memory, for staging
  virtual void free_host(void* p) noexcept = 0;
  // Any direction (the runtime tells host from device by address).
  virtual void copy_async(void* dst, const void* src, size_t bytes, StreamId stream) = 0;
  virtual void reduce_async(const ReduceArgs& args, StreamId stream) = 0;

  virtual UniqueId nccl_unique_id() = 0;
  // Collective over `nranks` processes that pass the same id. Never blocks past `timeout` (NCCL's
  // non-blocking mode, polled): Error(kTimeout) naming this rank when the others did not join.
  virtual std::unique_ptr<NcclComm> nccl_init(const UniqueId& id, int nranks, int rank, int device,
                                              std::chrono::milliseconds timeout) = 0;
};

// The process's device runtime: the CUDA one when libtutti was built with it, else the one that
// finds no device; a ScopedDeviceApi replaces it while it lives.
DeviceApi& api();

// Makes api() return `replacement` until destroyed (tests install the host-memory stand-in this
// way, before the first communicator is made).
class ScopedDeviceApi {
 public:
  explicit ScopedDeviceApi(std::shared_ptr<DeviceApi> replacement);
  ~ScopedDeviceApi();
  ScopedDeviceApi(const ScopedDeviceApi&) = delete;
  ScopedDeviceApi& operator=(const ScopedDeviceApi&) = delete;

 private:
  std::shared_ptr<DeviceApi> previous_;
};

// Owners of the runtime's objects, so that no path leaks one.
class Stream {
 public:
  Stream() = default;
  explicit Stream(int device) : id_(api().create_stream(device)) {}
  ~Stream() { reset(); }
  Stream(Stream&& other) noexcept : id_(std::exchange(other.id_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, nullptr);
    }
    return *this;
  }
  StreamId id() const { return id_; }
  void reset() noexcept {
    if (id_ != nullptr) api().destroy_stream(std::exchange(id_, nullptr));
  }

 private:
  StreamId id_ = nullptr;
};

class Event {
 public:
  Event() = default;
  explicit Event(int device) : id_(api().create_event(device)) {}
  ~Event() { reset(); }
  Event(Event&& other) noexcept : id_(std::exchange(other.id_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, nullptr);
    }
    return *this;
  }
  EventId id() const { return id_; }
  void reset() noexcept {
    if (id_ != nullptr) api().destroy_event(std::exchange(id_, nullptr));
  }

 private:
  EventId id_ = nullptr;
};

// Device memory (device >= 0) or pinned host memory (device < 0).
class Buffer {
 public:
  Buffer() = default;
  Buffer(size_t bytes, int device)
      : data_(device >= 0 ? api().alloc(bytes, device) : api().alloc_host(bytes)),
        bytes_(bytes),
        device_(device) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)),
        device_(other.device_) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
      device_ = other.device_;
    }
    return *this;
  }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  void reset() noexcept {
    if (data_ == nullptr) return;
    if (device_ >= 0)
      api().free(std::exchange(data_, nullptr));
    else
      api().free_host(std::exchange(data_, nullptr));
    bytes_ = 0;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
};

}  // namespace tutti::device
