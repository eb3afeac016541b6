// tutti-bench --device cuda: one rank's send and receive buffers in GPU memory. The runner keeps
// filling and checking host buffers as for --device host; these mirror them: the inputs go up
// before a checked or timed run, the results come down for the check. Only the calls themselves
// (tutti's and the NCCL baseline's) see device pointers.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace tutti::bench {

class DeviceBuffers {
 public:
  virtual ~DeviceBuffers() = default;
  virtual std::byte* send() = 0;
  virtual std::byte* recv() = 0;
  // The first `bytes` of each host buffer to its device twin; returns once they are there.
  virtual void upload(std::span<const std::byte> host_send, std::span<const std::byte> host_recv,
                      size_t bytes) = 0;
  // The stream tutti's calls are given (CallOptions::stream): a non-blocking stream of the buffers'
  // device, made as the NCCL baseline makes its own (a query of the legacy default stream cost
  // about 2 us more on an H200). upload() and download_recv() run on it too.
  virtual void* stream() = 0;
  // Returns once the work tutti's calls enqueued on stream() has completed; polls it, as the NCCL
  // baseline polls its own.
  virtual void wait_for_calls() = 0;
  virtual void download_recv(std::span<std::byte> host_recv, size_t bytes) = 0;
  // "GPU 1 of 8: NVIDIA H100 80GB HBM3", for the header.
  virtual std::string description() const = 0;
};

// Whether this tutti-bench was built with CUDA (TUTTI_WITH_CUDA).
bool cuda_built();
// Picks the GPU local_rank % (GPUs on this host) and allocates `bytes` for each side there.
// Error(kDevice) naming the CUDA failure when there is no usable GPU or no CUDA in this build.
std::unique_ptr<DeviceBuffers> make_device_buffers(size_t bytes, int local_rank);

}  // namespace tutti::bench
