// Turning a CUDA runtime or NCCL status into tutti's one error type. Every message names the call,
// the library's own error string, and what the user can do about it.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string_view>

namespace tutti::device::cuda {

// Throws Error(kDevice) unless `status` is cudaSuccess: "<call> failed: <name> (<string>);
// <advice>". Clears the runtime's sticky last error first, so a later cudaGetLastError() does not
// report it again.
void check_cuda(cudaError_t status, std::string_view call, std::string_view advice = {});

// The advice for a status: what usually causes it (no driver, out of memory, ...) and what to do.
std::string_view cuda_advice(cudaError_t status);

// Throws Error(kDevice) unless `status` is ncclSuccess, with ncclGetErrorString and, when `comm` is
// given, ncclGetLastError's detail. ncclInProgress is not an error; callers handle it first.
void check_nccl(ncclResult_t status, std::string_view call, ncclComm_t comm,
                std::string_view advice = {});

}  // namespace tutti::device::cuda
