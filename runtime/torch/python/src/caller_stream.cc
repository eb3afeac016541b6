#include "caller_stream.hpp"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "tensors.hpp"

namespace tutti::torch_backend {
namespace {

// getStreamNativeHandle where this torch has it; a dependent call, so that its absence (torch
// 1.13) is no error but a refusal.
template <typename Impl = c10::impl::DeviceGuardImplInterface>
void* native_handle(const Impl* impl, const c10::Stream& stream) {
  if constexpr (requires { impl->getStreamNativeHandle(stream); })
    return impl->getStreamNativeHandle(stream);
  else
    TORCH_CHECK(false, "tutti: this torch cannot name a CUDA stream (torch 2.x can)");
}

template <typename Impl = c10::impl::DeviceGuardImplInterface>
constexpr bool has_native_handle() {
  return requires(const Impl* impl, const c10::Stream& stream) {
    impl->getStreamNativeHandle(stream);
  };
}

}  // namespace

bool cuda_tensors_supported() {
  return has_native_handle();
}

std::optional<c10::Stream> CallerStream::of(const char* op, const std::vector<at::Tensor>& outputs,
                                            const std::vector<at::Tensor>& inputs) {
  std::optional<at::Tensor> first_cuda;
  std::optional<at::Tensor> first_cpu;
  for (const auto* list : {&outputs, &inputs}) {
    for (const auto& t : *list) {
      if (!t.defined()) continue;
      if (!t.is_cuda()) {
        if (!first_cpu) first_cpu = t;
        continue;
      }
      if (!first_cuda) first_cuda = t;
      TORCH_CHECK(t.device() == first_cuda->device(), "tutti ", op, ": tensors on ",
                  first_cuda->device(), " and ", t.device(),
                  "; pass the tensors of one op on one device (one process per GPU)");
    }
  }
  if (!first_cuda) return std::nullopt;
  TORCH_CHECK(!first_cpu, "tutti ", op, ": tensor ", describe(*first_cpu), " is on the CPU and ",
              describe(*first_cuda), " on ", first_cuda->device(),
              "; pass all of an op's tensors on one device");
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(first_cuda->device());
}

CallerStream::Guard::Guard(const std::optional<c10::Stream>& stream) {
  if (stream) guard_.emplace(*stream);
}

tutti::CallOptions on_stream(tutti::CallOptions call, const at::Tensor& tensor) {
  if (tensor.is_cuda()) {
    const c10::impl::DeviceGuardImplInterface* impl =
        c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    call.stream = native_handle(impl, impl->getStream(tensor.device()));
    // Stream-ordered, as NCCL's backend: the call returns once enqueued after the host agreement,
    // so the worker agrees on the next op while the device runs this one (the Work's future and
    // the worker's device watch take it from there).
    call.enqueue_only = true;
  }
  return call;
}

at::Tensor on_host(const at::Tensor& tensor) {
  return tensor.is_cuda() ? tensor.to(at::kCPU) : tensor;
}

}  // namespace tutti::torch_backend
