// CUDA tensors through backend tutti run on the stream that was current where the op was issued,
// as ProcessGroupNCCL's do from torch's point of view: the op reads its inputs after the work
// already enqueued there, and work enqueued there afterwards sees its results. The worker thread
// makes that stream current (CallerStream::Guard) while it runs the op, so that torch's own copies
// (a contiguous buffer, a flat concatenation, the copies back) and tutti's device calls
// (CallOptions::stream) are ordered on it. Only c10's device-neutral stream interface is used:
// the package needs no CUDA headers, and a CPU-only torch builds it unchanged.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>

#include <optional>
#include <vector>

#include "tutti/options.hpp"

namespace tutti::torch_backend {

// Whether this torch names a stream's cudaStream_t (c10's getStreamNativeHandle, torch 2.x):
// without it CUDA tensors are refused.
bool cuda_tensors_supported();

class CallerStream {
 public:
  // The issuing thread's current stream of the device the op's CUDA tensors are on (none when
  // every tensor is a CPU tensor). Throws naming `op` when tensors are on different devices, or
  // CPU and CUDA tensors are mixed.
  static std::optional<c10::Stream> of(const char* op, const std::vector<at::Tensor>& outputs,
                                       const std::vector<at::Tensor>& inputs = {});

  // On the worker thread, for the life of the guard: the stream (and its device) is current.
  class Guard {
   public:
    explicit Guard(const std::optional<c10::Stream>& stream);

   private:
    std::optional<c10::StreamGuard> guard_;
  };
};

// `call` with the current stream of `tensor`'s device as its stream when `tensor` is a CUDA tensor
// (inside a Guard, the caller's), returning once enqueued there (CallOptions::enqueue_only);
// unchanged for a CPU tensor.
tutti::CallOptions on_stream(tutti::CallOptions call, const at::Tensor& tensor);

// `tensor` itself on the CPU, or a CPU copy of a CUDA tensor: for the collectives tutti runs on
// host buffers only (reduce, gather, scatter, all-to-all, uneven gathers and reduce-scatters,
// send and receive). The copy waits for the current stream (the caller's).
at::Tensor on_host(const at::Tensor& tensor);

}  // namespace tutti::torch_backend
