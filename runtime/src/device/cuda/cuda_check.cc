#include "device/cuda/cuda_check.hpp"

#include "core/error.hpp"
#include "device/cuda/nccl_library.hpp"

namespace tutti::device::cuda {

std::string_view cuda_advice(cudaError_t status) {
  switch (status) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      return "this process sees no usable GPU (is the NVIDIA driver installed and new enough for "
             "the CUDA runtime libtutti was built with, and does CUDA_VISIBLE_DEVICES list a "
             "device?); use host buffers here";
    case cudaErrorMemoryAllocation:
      return "the device is out of memory; free some or use smaller buffers";
    case cudaErrorInvalidDevice:
      return "the device number is not one of this process's devices (see CUDA_VISIBLE_DEVICES)";
    case cudaErrorNoKernelImageForDevice:
      return "libtutti has no code for this GPU's architecture; rebuild with its compute "
             "capability in CMAKE_CUDA_ARCHITECTURES";
    default:
      return "see the CUDA error above; an earlier kernel fault makes every later call fail";
  }
}

void check_cuda(cudaError_t status, std::string_view call, std::string_view advice) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();
  throw make_error(ErrorCode::kDevice, "{} failed: {} ({}); {}", call, cudaGetErrorName(status),
                   cudaGetErrorString(status), advice.empty() ? cuda_advice(status) : advice);
}

void check_nccl(ncclResult_t status, std::string_view call, ncclComm_t comm,
                std::string_view advice) {
  if (status == ncclSuccess) return;
  const char* detail = nccl().GetLastError(comm);
  throw make_error(ErrorCode::kDevice, "{} failed: {}{}{}; {}", call, nccl().GetErrorString(status),
                   detail != nullptr && *detail != '\0' ? ": " : "",
                   detail != nullptr ? detail : "",
                   advice.empty() ? "NCCL_DEBUG=WARN (or INFO) shows NCCL's own account" : advice);
}

}  // namespace tutti::device::cuda
