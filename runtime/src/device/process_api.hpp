// The device runtime a process starts with: device/cuda/cuda_device_api.cc when libtutti is built
// with CUDA, device/device_api_without_cuda.cc otherwise (one of the two is linked).
#pragma once

#include <memory>

#include "device/device_api.hpp"

namespace tutti::device {

std::shared_ptr<DeviceApi> make_process_api();

}  // namespace tutti::device
