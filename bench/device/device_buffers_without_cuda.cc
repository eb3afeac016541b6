#include "device/device_buffers.hpp"
#include "tutti/error.hpp"

namespace tutti::bench {

bool cuda_built() {
  return false;
}

std::unique_ptr<DeviceBuffers> make_device_buffers(size_t, int) {
  throw Error(ErrorCode::kDevice,
              "tutti-bench was built without CUDA, so --device cuda is not available; reconfigure "
              "with -DTUTTI_WITH_CUDA=ON on a machine with the CUDA toolkit and NCCL");
}

}  // namespace tutti::bench
