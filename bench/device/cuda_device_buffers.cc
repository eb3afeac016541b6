// --device cuda's buffers through the CUDA runtime (built only with TUTTI_WITH_CUDA).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <chrono>

#include "device/device_buffers.hpp"
#include "tutti/error.hpp"

namespace tutti::bench {

namespace {

// As long as the NCCL baseline waits for its stream.
constexpr std::chrono::seconds kWaitDeadline{120};

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw Error(ErrorCode::kDevice,
              fmt::format("--device cuda: {} failed: {} ({}); run it on a machine with "
                          "an NVIDIA GPU and its driver, or use --device host",
                          call, cudaGetErrorString(status), cudaGetErrorName(status)));
}

struct CudaFree {
  void operator()(std::byte* p) const noexcept { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<std::byte, CudaFree>;

DevicePtr allocate(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  return DevicePtr(static_cast<std::byte*>(p));
}

class CudaDeviceBuffers final : public DeviceBuffers {
 public:
  CudaDeviceBuffers(size_t bytes, int device, std::string name)
      : send_(allocate(bytes)), recv_(allocate(bytes)), device_(device), name_(std::move(name)) {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CudaDeviceBuffers() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  CudaDeviceBuffers(const CudaDeviceBuffers&) = delete;
  CudaDeviceBuffers& operator=(const CudaDeviceBuffers&) = delete;
  void* stream() override { return stream_; }
  std::byte* send() override { return send_.get(); }
  std::byte* recv() override { return recv_.get(); }
  void upload(std::span<const std::byte> host_send, std::span<const std::byte> host_recv,
              size_t bytes) override {
    // On the calls' stream, and waited for: a plain cudaMemcpy from pageable memory runs on the
    // legacy stream, which a non-blocking stream does not wait for, and may return before its
    // last bytes land.
    check(cudaMemcpyAsync(send_.get(), host_send.data(), bytes, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync");
    check(cudaMemcpyAsync(recv_.get(), host_recv.data(), bytes, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void download_recv(std::span<std::byte> host_recv, size_t bytes) override {
    check(cudaMemcpyAsync(host_recv.data(), recv_.get(), bytes, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void wait_for_calls() override {
    const auto deadline = std::chrono::steady_clock::now() + kWaitDeadline;
    cudaError_t status = cudaErrorNotReady;
    while ((status = cudaStreamQuery(stream_)) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() > deadline)
        throw Error(ErrorCode::kTimeout,
                    fmt::format("--device cuda: the work of tutti's call on GPU {} did not "
                                "complete within {} s (cudaStreamQuery of its stream)",
                                device_, kWaitDeadline.count()));
    }
    check(status, "cudaStreamQuery");
  }
  std::string description() const override { return name_; }

 private:
  DevicePtr send_;
  DevicePtr recv_;
  int device_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

bool cuda_built() {
  return true;
}

std::unique_ptr<DeviceBuffers> make_device_buffers(size_t bytes, int local_rank) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count == 0) throw Error(ErrorCode::kDevice, "--device cuda: this host has no CUDA device");
  const int device = local_rank % count;
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return std::make_unique<CudaDeviceBuffers>(
      bytes, device, fmt::format("GPU {} of {}: {}", device, count, prop.name));
}

}  // namespace tutti::bench
