// The device runtime of a libtutti built with CUDA: the CUDA runtime (static libcudart) for
// devices, memory, streams and events, the kernels of reduce/cuda for reductions, and NCCL
// (nccl_comm.cc) for communicators. Without a driver or a device it finds 0 devices and the host
// path never calls into CUDA again.
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "core/log.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/nccl_comm.hpp"
#include "device/cuda/nccl_library.hpp"
#include "device/process_api.hpp"
#include "reduce/cuda/reduce_kernels.hpp"

namespace tutti::device {

namespace {

using cuda::check_cuda;
using cuda::check_nccl;

class CudaDeviceApi final : public DeviceApi {
 public:
  std::string_view name() const override { return "cuda"; }

  int device_count() override {
    // Asked for every buffer of every call: once known, a plain load (std::call_once stores two
    // thread-locals on each call, a __tls_get_addr each in a shared library).
    if (const int known = count_.load(std::memory_order_acquire); known >= 0) return known;
    std::call_once(count_once_, [this] {
      int count = 0;
      const cudaError_t status = cudaGetDeviceCount(&count);
      if (status != cudaSuccess) {
        // The usual case on a host without GPUs: not an error, every buffer is host memory.
        log::debug("CUDA: no usable device ({}: {}); device buffers are unavailable",
                   cudaGetErrorName(status), cudaGetErrorString(status));
        (void)cudaGetLastError();
        count = 0;
      }
      count_.store(count, std::memory_order_release);
    });
    return count_.load(std::memory_order_acquire);
  }

  PointerInfo locate(const void* p) override {
    // Without a device no pointer can be one, and the host path pays for no runtime call.
    if (p == nullptr || device_count() == 0) return {};
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      (void)cudaGetLastError();  // an unknown pointer is host memory, and not sticky
      return {};
    }
    if (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged)
      return {true, attributes.device};
    return {};
  }

  void set_device(int device) override {
    // Every device call sets its device (the thread may have changed); most find it current, and
    // cudaGetDevice is a thread-local read (the runtime makes the device's primary context current
    // on its next call if this thread has none yet).
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == device) return;
    check_cuda(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device));
  }

  // The device a call is about to use; the message says which call wanted it.
  static void set_device_for(int device, std::string_view call) {
    check_cuda(cudaSetDevice(device), fmt::format("cudaSetDevice({}) for {}", device, call));
  }

  int current_device() override {
    int device = -1;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    return device;
  }

  StreamId create_stream(int device) override {
    set_device_for(device, "cudaStreamCreateWithFlags");
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
    return stream;
  }

  void destroy_stream(StreamId stream) noexcept override {
    if (cudaStreamDestroy(static_cast<cudaStream_t>(stream)) != cudaSuccess)
      (void)cudaGetLastError();
  }

  EventId create_event(int device) override {
    set_device_for(device, "cudaEventCreateWithFlags");
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
               "cudaEventCreateWithFlags");
    return event;
  }

  void destroy_event(EventId event) noexcept override {
    if (cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess) (void)cudaGetLastError();
  }

  void record(EventId event, StreamId stream) override {
    check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
               "cudaEventRecord");
  }

  void wait(StreamId stream, EventId event) override {
    check_cuda(
        cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
        "cudaStreamWaitEvent");
  }

  bool query(EventId event) override {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaSuccess) return true;
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not-ready is an answer, not an error to keep
      return false;
    }
    check_cuda(status, "cudaEventQuery");
    return false;
  }

  void* alloc(size_t bytes, int device) override {
    set_device_for(device, "cudaMalloc");
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes),
               fmt::format("cudaMalloc({} bytes on device {})", bytes, device));
    return p;
  }

  void free(void* p) noexcept override {
    if (p != nullptr && cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
  }

  void* alloc_host(size_t bytes) override {
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, bytes, cudaHostAllocDefault),
               fmt::format("cudaHostAlloc({} bytes)", bytes));
    return p;
  }

  void free_host(void* p) noexcept override {
    if (p != nullptr && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
  }

  void copy_async(void* dst, const void* src, size_t bytes, StreamId stream) override {
    if (bytes == 0) return;
    check_cuda(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)),
        fmt::format("cudaMemcpyAsync({} bytes)", bytes));
  }

  void reduce_async(const ReduceArgs& args, StreamId stream) override {
    reduce::validate(args);
    const auto status = static_cast<cudaError_t>(reduce::cuda::launch_reduce(args, stream));
    check_cuda(status, fmt::format("the reduce kernel launch ({} elements of {}, op {})",
                                   args.count, to_string(args.type), to_string(args.op)));
  }

  UniqueId nccl_unique_id() override {
    ncclUniqueId id;
    check_nccl(cuda::nccl().GetUniqueId(&id), "ncclGetUniqueId", nullptr,
               "NCCL could not set up its bootstrap network (NCCL_SOCKET_IFNAME picks the "
               "interface; NCCL_DEBUG=WARN shows why)");
    UniqueId out;
    std::memcpy(out.data(), &id, sizeof id);
    return out;
  }

  std::unique_ptr<NcclComm> nccl_init(const UniqueId& id, int nranks, int rank, int device,
                                      std::chrono::milliseconds timeout) override {
    return cuda::init_nccl_comm(id, nranks, rank, device, timeout);
  }

 private:
  std::once_flag count_once_;
  std::atomic<int> count_{-1};  // -1 until counted
};

}  // namespace

std::shared_ptr<DeviceApi> make_process_api() {
  return std::make_shared<CudaDeviceApi>();
}

}  // namespace tutti::device
