// The device runtime of a libtutti built without CUDA: no device exists, so every buffer is host
// memory and nothing on the host path calls into this file; a call that needs a device says why
// it cannot have one.
#include "core/error.hpp"
#include "device/process_api.hpp"

namespace tutti::device {

namespace {

[[noreturn]] void no_cuda(std::string_view what) {
  throw make_error(ErrorCode::kDevice,
                   "{}: this libtutti was built without CUDA (configure with -DTUTTI_WITH_CUDA=ON "
                   "on a machine with the CUDA toolkit and NCCL to use device buffers)",
                   what);
}

class NoDeviceApi final : public DeviceApi {
 public:
  std::string_view name() const override { return "none"; }
  int device_count() override { return 0; }
  PointerInfo locate(const void*) override { return {}; }
  void set_device(int) override { no_cuda("cudaSetDevice"); }
  int current_device() override { no_cuda("cudaGetDevice"); }
  StreamId create_stream(int) override { no_cuda("cudaStreamCreate"); }
  void destroy_stream(StreamId) noexcept override {}
  EventId create_event(int) override { no_cuda("cudaEventCreate"); }
  void destroy_event(EventId) noexcept override {}
  void record(EventId, StreamId) override { no_cuda("cudaEventRecord"); }
  void wait(StreamId, EventId) override { no_cuda("cudaStreamWaitEvent"); }
  bool query(EventId) override { no_cuda("cudaEventQuery"); }
  void* alloc(size_t, int) override { no_cuda("cudaMalloc"); }
  void free(void*) noexcept override {}
  void* alloc_host(size_t) override { no_cuda("cudaHostAlloc"); }
  void free_host(void*) noexcept override {}
  void copy_async(void*, const void*, size_t, StreamId) override { no_cuda("cudaMemcpyAsync"); }
  void reduce_async(const ReduceArgs&, StreamId) override { no_cuda("the reduce kernel"); }
  UniqueId nccl_unique_id() override { no_cuda("ncclGetUniqueId"); }
  std::unique_ptr<NcclComm> nccl_init(const UniqueId&, int, int, int,
                                      std::chrono::milliseconds) override {
    no_cuda("ncclCommInitRank");
  }
};

}  // namespace

std::shared_ptr<DeviceApi> make_process_api() {
  return std::make_shared<NoDeviceApi>();
}

}  // namespace tutti::device
