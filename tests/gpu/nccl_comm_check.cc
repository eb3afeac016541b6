// The CUDA NcclComm on one GPU: a 1-rank communicator made in non-blocking mode, every data call
// (allreduce with and without a scale, reduce_scatter, allgather, broadcast, a grouped send/recv to
// itself), split (with a color and without), async_error and abort. A one-rank job cannot show a
// missing peer; cuda_no_device and the multi-rank GPU jobs cover the rest. Exits 77 ("no CUDA
// device") on a host without a GPU.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "device/device_api.hpp"
#include "tutti/error.hpp"

namespace {

namespace device = tutti::device;
using tutti::DataType;
using tutti::ReduceOp;

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

void synchronize(device::DeviceApi& api, device::StreamId stream, int dev) {
  device::Event done(dev);
  api.record(done.id(), stream);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!api.query(done.id()))
    if (std::chrono::steady_clock::now() > deadline)
      throw tutti::Error(tutti::ErrorCode::kTimeout, "the stream did not finish in 60 s");
}

}  // namespace

int main() {
  device::DeviceApi& api = device::api();
  if (api.device_count() == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  try {
    const int dev = 0;
    const size_t n = 1000;
    device::Stream stream(dev);
    device::Buffer send(n * sizeof(float), dev), recv(n * sizeof(float), dev);
    std::vector<float> host(n), back(n);
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
    api.copy_async(send.data(), host.data(), n * sizeof(float), stream.id());
    expect(api.locate(send.data()).on_device, "a cudaMalloc buffer is on the device");
    expect(!api.locate(host.data()).on_device, "a vector's buffer is host memory");

    const auto comm = api.nccl_init(api.nccl_unique_id(), 1, 0, dev, std::chrono::seconds(60));
    expect(comm->rank() == 0 && comm->size() == 1, "rank 0 of 1");
    expect(comm->supports(DataType::kFloat32, ReduceOp::kAvg), "float32 avg is NCCL's");
    expect(!comm->supports(DataType::kInt16, ReduceOp::kSum), "NCCL has no int16");
    expect(!comm->supports(DataType::kInt32, ReduceOp::kBxor), "NCCL has no bitwise ops");
    expect(comm->supports(DataType::kBool, ReduceOp::kProd), "bool prod is NCCL's min");

    const auto check = [&](const char* what, float factor) {
      api.copy_async(back.data(), recv.data(), n * sizeof(float), stream.id());
      synchronize(api, stream.id(), dev);
      for (size_t i = 0; i < n; ++i)
        if (back[i] != host[i] * factor) {
          expect(false, std::string(what) + ": element " + std::to_string(i));
          return;
        }
    };
    comm->all_reduce(send.data(), recv.data(), n, DataType::kFloat32, ReduceOp::kSum, 1.0,
                     stream.id());
    check("allreduce sum", 1.0f);
    comm->all_reduce(send.data(), recv.data(), n, DataType::kFloat32, ReduceOp::kSum, 0.5,
                     stream.id());
    check("allreduce sum scaled 0.5", 0.5f);
    comm->all_reduce(send.data(), recv.data(), n, DataType::kFloat32, ReduceOp::kAvg, 2.0,
                     stream.id());
    check("allreduce avg scaled 2", 2.0f);
    comm->reduce_scatter(send.data(), recv.data(), n, DataType::kFloat32, ReduceOp::kMax, 1.0,
                         stream.id());
    check("reduce_scatter max", 1.0f);
    comm->all_gather(send.data(), recv.data(), n, DataType::kFloat32, stream.id());
    check("allgather", 1.0f);
    comm->broadcast(send.data(), recv.data(), n, DataType::kFloat32, 0, stream.id());
    check("broadcast", 1.0f);
    comm->group_start();
    comm->send(send.data(), n * sizeof(float), 0, stream.id());
    comm->recv(recv.data(), n * sizeof(float), 0, stream.id());
    comm->group_end();
    check("send/recv to itself", 1.0f);
    expect(comm->async_error().empty(), "no async error: " + comm->async_error());

    const auto child = comm->split(7, 0, std::chrono::seconds(60));
    expect(child && child->size() == 1, "split with a color gives a 1-rank communicator");
    if (child) {
      child->all_reduce(send.data(), recv.data(), n, DataType::kFloat32, ReduceOp::kSum, 1.0,
                        stream.id());
      check("allreduce on the split", 1.0f);
    }
    expect(comm->split(-1, 0, std::chrono::seconds(60)) == nullptr, "no color gives null");

    comm->abort();
    comm->abort();  // idempotent
    try {
      comm->all_reduce(send.data(), recv.data(), n, DataType::kFloat32, ReduceOp::kSum, 1.0,
                       stream.id());
      expect(false, "a call after abort throws");
    } catch (const tutti::Error& e) {
      expect(e.code() == tutti::ErrorCode::kAborted, std::string("after abort: ") + e.what());
    }
  } catch (const tutti::Error& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  if (failures > 0) return 1;
  std::printf("nccl comm OK\n");
  return 0;
}
