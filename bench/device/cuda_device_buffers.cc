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
      : send_(allocate(bytes)), recv_(allocate(bytes)), device_(device), name_(std::move(name)) {}
  std::byte* send() override { return send_.get(); }
  std::byte* recv() override { return recv_.get(); }
  void upload(std::span<const std::byte> host_send, std::span<const std::byte> host_recv,
              size_t bytes) override {
    check(cudaMemcpy(send_.get(), host_send.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(recv_.get(), host_recv.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void download_recv(std::span<std::byte> host_recv, size_t bytes) override {
    check(cudaMemcpy(host_recv.data(), recv_.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }
  void wait_for_calls() override {
    const auto deadline = std::chrono::steady_clock::now() + kWaitDeadline;
    cudaError_t status = cudaErrorNotReady;
    while ((status = cudaStreamQuery(nullptr)) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() > deadline)
        throw Error(ErrorCode::kTimeout,
                    fmt::format("--device cuda: the work of tutti's call on GPU {} did not "
                                "complete within {} s (cudaStreamQuery of the default stream)",
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
