// The CUDA DeviceApi of a CUDA-built libtutti on a host without a GPU (or without a driver): it
// finds no device, calls nothing for host pointers, and every call that needs a device fails
// promptly with Error(kDevice) naming the CUDA or NCCL call; NCCL init never hangs. Exits 77 (a
// skip for ctest) where a device exists: this is the GPU-less host's test.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "device/device_api.hpp"
#include "integration/support/check_report.hpp"
#include "tutti/error.hpp"

namespace {

using tutti::testing::fail;
using tutti::testing::g_failures;

// `call` must throw Error(code) whose message contains every one of `words`.
void expect_error(std::string_view name, tutti::ErrorCode code,
                  const std::vector<std::string_view>& words, const std::function<void()>& call) {
  try {
    call();
  } catch (const tutti::Error& e) {
    const std::string message = e.what();
    if (e.code() != code) fail(std::string(name) + ": wrong error code: " + message);
    for (std::string_view word : words)
      if (message.find(word) == std::string::npos)
        fail(std::string(name) + ": message lacks '" + std::string(word) + "': " + message);
    std::printf("%.*s: %s\n", static_cast<int>(name.size()), name.data(), message.c_str());
    return;
  }
  fail(std::string(name) + ": did not throw");
}

}  // namespace

int main() {
  using tutti::ErrorCode;
  namespace device = tutti::device;
  device::DeviceApi& api = device::api();
  if (api.name() != "cuda") {
    std::printf("FAIL: the process DeviceApi is '%.*s', not the CUDA one\n",
                static_cast<int>(api.name().size()), api.name().data());
    return 1;
  }
  if (const int count = api.device_count(); count > 0) {
    std::printf(
        "SKIP: this host has %d CUDA device(s); the no-device test is for hosts without one\n",
        count);
    return 77;
  }
  // Asked twice: the answer is cached and stays 0.
  if (api.device_count() != 0) fail("device_count changed");

  int host_value = 0;
  const device::PointerInfo where = api.locate(&host_value);
  if (where.on_device || where.device != -1) fail("a host pointer was located on a device");
  if (api.locate(nullptr).on_device) fail("null was located on a device");

  // The runtime's errors name the call and CUDA's own error name (cudaErrorInsufficientDriver
  // without a driver, cudaErrorNoDevice with a driver and no GPU).
  expect_error("alloc", ErrorCode::kDevice, {"cudaMalloc", "cudaError"},
               [&] { (void)api.alloc(1024, 0); });
  expect_error("Buffer", ErrorCode::kDevice, {"cudaMalloc"}, [] { device::Buffer b(64, 0); });
  expect_error("create_stream", ErrorCode::kDevice, {"cudaStreamCreate", "cudaError"},
               [&] { (void)api.create_stream(0); });
  expect_error("create_event", ErrorCode::kDevice, {"cudaEventCreate", "cudaError"},
               [&] { (void)api.create_event(0); });
  expect_error("alloc_host", ErrorCode::kDevice, {"cudaHostAlloc", "cudaError"},
               [&] { (void)api.alloc_host(1024); });
  expect_error("current_device", ErrorCode::kDevice, {"cudaGetDevice"},
               [&] { (void)api.current_device(); });
  // The kernel's host-side check comes before any launch.
  device::ReduceArgs avg;
  avg.out = &host_value;
  avg.a = &host_value;
  avg.b = &host_value;
  avg.count = 1;
  avg.op = tutti::ReduceOp::kAvg;
  expect_error("reduce_async(avg)", ErrorCode::kInvalidArgument, {"avg"},
               [&] { api.reduce_async(avg, nullptr); });
  device::ReduceArgs bitwise = avg;
  bitwise.op = tutti::ReduceOp::kBxor;
  expect_error("reduce_async(bxor float32)", ErrorCode::kInvalidArgument, {"bitwise"},
               [&] { api.reduce_async(bitwise, nullptr); });
  device::ReduceArgs scaled_int = avg;
  scaled_int.op = tutti::ReduceOp::kSum;
  scaled_int.type = tutti::DataType::kInt32;
  scaled_int.post = 0.5;
  expect_error("reduce_async(scaled int32)", ErrorCode::kInvalidArgument, {"scales"},
               [&] { api.reduce_async(scaled_int, nullptr); });
  device::ReduceArgs launch = avg;
  launch.op = tutti::ReduceOp::kSum;
  expect_error("reduce_async(launch)", ErrorCode::kDevice, {"reduce kernel", "cudaError"},
               [&] { api.reduce_async(launch, nullptr); });

  // NCCL: a unique id may or may not be made without a GPU (it only needs a socket); init must
  // fail either way, and promptly: CUDA fails first, or the 2 s deadline ends the wait for the
  // rank that never comes.
  device::UniqueId id{};
  try {
    id = api.nccl_unique_id();
    std::printf("nccl_unique_id: made one\n");
  } catch (const tutti::Error& e) {
    std::printf("nccl_unique_id: %s\n", e.what());
    if (e.code() != ErrorCode::kDevice) fail("nccl_unique_id: wrong error code");
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)api.nccl_init(id, 2, 0, 0, std::chrono::milliseconds(2000));
    fail("nccl_init succeeded without a device");
  } catch (const tutti::Error& e) {
    std::printf("nccl_init: %s\n", e.what());
    if (e.code() != ErrorCode::kDevice && e.code() != ErrorCode::kTimeout)
      fail("nccl_init: neither kDevice nor kTimeout");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("nccl_init failed after %.2f s\n", seconds);
  if (seconds > 10) fail("nccl_init took more than 10 s to fail");

  if (g_failures > 0) return 1;
  std::printf("no device OK\n");
  return 0;
}
