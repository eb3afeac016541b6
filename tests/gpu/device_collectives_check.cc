// The device path on real GPUs: every dtype and op, counts {0, 1, n-1, odd, larger than
// a segment}, in place and not, through the public API on cudaMalloc'd buffers, each result
// checked against tutti's host allreduce of the same inputs; prescale and postscale; the caller's
// stream ordering; broadcast, allgather and reduce_scatter. Run by tests/gpu/sweep.sh under
// tuttirun with one rank per GPU; `--probe` alone says whether this host has a CUDA device (exit
// 77 and why when it has none, so ctest reports a skip here).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tutti/tutti.hpp"

namespace {

using tutti::DataType;
using tutti::ReduceOp;

int g_failures = 0;

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "FAIL: %s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

struct CudaFree {
  void operator()(std::byte* p) const noexcept { cudaFree(p); }
};
using DeviceBytes = std::unique_ptr<std::byte, CudaFree>;

DeviceBytes device_bytes(size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes == 0 ? 16 : bytes), "cudaMalloc");
  return DeviceBytes(static_cast<std::byte*>(p));
}

// Small integers (exact in every type, and products stay small) that differ by rank and index.
void fill(std::vector<std::byte>& host, size_t count, DataType type, int rank) {
  host.assign(count * tutti::element_size(type), std::byte{0});
  for (size_t i = 0; i < count; ++i) {
    const int v = static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 5) + 1;
    std::byte* at = host.data() + i * tutti::element_size(type);
    switch (type) {
      case DataType::kFloat32: {
        float f = static_cast<float>(v);
        std::memcpy(at, &f, 4);
        break;
      }
      case DataType::kFloat64: {
        double d = v;
        std::memcpy(at, &d, 8);
        break;
      }
      case DataType::kFloat16: {
        // 1..5 as IEEE half: exponent 15 + e, the mantissa's top bits.
        static const uint16_t kHalf[] = {0, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500};
        std::memcpy(at, &kHalf[v], 2);
        break;
      }
      case DataType::kBFloat16: {
        float f = static_cast<float>(v);
        uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        const uint16_t top = static_cast<uint16_t>(bits >> 16);
        std::memcpy(at, &top, 2);
        break;
      }
      case DataType::kInt32: {
        int32_t x = v;
        std::memcpy(at, &x, 4);
        break;
      }
      case DataType::kInt64: {
        int64_t x = v;
        std::memcpy(at, &x, 8);
        break;
      }
      case DataType::kInt16: {
        int16_t x = static_cast<int16_t>(v);
        std::memcpy(at, &x, 2);
        break;
      }
      case DataType::kUInt8:
      case DataType::kInt8:
        *at = static_cast<std::byte>(v);
        break;
      case DataType::kBool:
        *at = static_cast<std::byte>(v % 2);
        break;
    }
  }
}

double as_double(const std::byte* at, DataType type) {
  switch (type) {
    case DataType::kFloat32: {
      float f;
      std::memcpy(&f, at, 4);
      return f;
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, at, 8);
      return d;
    }
    case DataType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, at, 2);
      const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
      const double sign = (h & 0x8000) ? -1 : 1;
      if (exponent == 0x1f) return mantissa ? NAN : sign * INFINITY;
      if (exponent == 0) return sign * std::ldexp(mantissa, -24);
      return sign * std::ldexp(1024 + mantissa, exponent - 25);
    }
    case DataType::kBFloat16: {
      uint16_t b;
      std::memcpy(&b, at, 2);
      const uint32_t bits = static_cast<uint32_t>(b) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default:
      return 0;
  }
}

// Integers and bool must match bit for bit; floating results may differ in the last places where
// the device sums in another order or averages by multiplying (NCCL's avg), so they get a
// tolerance of a few units of their precision.
void expect_equal(const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                  DataType type, const std::string& what) {
  if (got == want) return;
  const size_t es = tutti::element_size(type);
  if (tutti::is_floating(type)) {
    const double tolerance = es == 2 ? 1e-2 : (es == 4 ? 1e-5 : 1e-12);
    for (size_t i = 0; i < got.size() / es; ++i) {
      const double g = as_double(got.data() + i * es, type),
                   w = as_double(want.data() + i * es, type);
      if (g == w || (std::isinf(g) && std::isinf(w) && (g > 0) == (w > 0))) continue;
      if (std::fabs(g - w) > tolerance * std::max(1.0, std::fabs(w))) {
        std::fprintf(stderr, "FAIL: %s: element %zu is %g, the host path says %g\n", what.c_str(),
                     i, g, w);
        ++g_failures;
        return;
      }
    }
    return;
  }
  size_t first = 0;
  while (first < got.size() && got[first] == want[first]) ++first;
  std::fprintf(stderr, "FAIL: %s: differs from the host path first at element %zu\n", what.c_str(),
               first / es);
  ++g_failures;
}

// Whether NCCL reduces (type, op) itself (device/cuda/nccl_types.cc): no int16, no bitwise ops,
// and bool only as bytes (sum and max are or, prod and min are and).
bool nccl_reduces(DataType type, ReduceOp op) {
  if (type == DataType::kInt16 || tutti::is_bitwise(op)) return false;
  if (type == DataType::kBool) return op != ReduceOp::kAvg;
  return true;
}

int g_refused = 0;

// Inputs go in, and results come out, through the caller's stream (cudaMemcpyAsync there, then
// cudaStreamSynchronize), as the API's contract says: a plain cudaMemcpy from pageable memory runs
// on the legacy default stream and may return before its last chunk reached the device, and a
// non-blocking stream is not ordered after it. The first H100 runs wrote inputs that way and read
// stale bytes after the first MiB, in about one sweep of six.
void allreduce_case(tutti::Communicator& comm, DataType type, ReduceOp op, size_t count,
                    bool in_place, cudaStream_t stream) {
  const size_t bytes = count * tutti::element_size(type);
  std::vector<std::byte> input, want, got(bytes);
  fill(input, count, type, comm.rank());
  want = input;
  comm.allreduce(want.data(), want.data(), count, type, op);  // the host path's answer
  DeviceBytes send = device_bytes(bytes), recv = device_bytes(bytes);
  check_cuda(cudaMemcpyAsync(send.get(), input.data(), bytes, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync");
  void* out = in_place ? send.get() : recv.get();
  tutti::CallOptions call;
  call.stream = stream;
  const std::string what =
      fmt::format("allreduce {} {} count {} {}", tutti::to_string(type), tutti::to_string(op),
                  count, in_place ? "in place" : "out of place");
  const char* path = std::getenv("TUTTI_DEVICE_ALLREDUCE");
  const bool nccl_only = path != nullptr && std::strcmp(path, "nccl") == 0;
  try {
    comm.allreduce(send.get(), out, count, type, op, call);
  } catch (const tutti::Error& e) {
    // The nccl path refuses what NCCL cannot reduce, alike on every rank, before any work (a
    // count of 0 is done before the path is chosen); everything else must succeed.
    if (nccl_only && count > 0 && !nccl_reduces(type, op) &&
        e.code() == tutti::ErrorCode::kInvalidArgument) {
      ++g_refused;
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      return;
    }
    std::fprintf(stderr, "FAIL: %s: %s\n", what.c_str(), e.what());
    ++g_failures;
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return;
  }
  if (nccl_only && count > 0 && !nccl_reduces(type, op)) {
    std::fprintf(stderr,
                 "FAIL: %s: TUTTI_DEVICE_ALLREDUCE=nccl took a type and op NCCL cannot "
                 "reduce\n",
                 what.c_str());
    ++g_failures;
  }
  check_cuda(cudaMemcpyAsync(got.data(), out, bytes, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  expect_equal(got, want, type, what);
}

// The caller's stream: an input written by a kernel-side memset still queued on it must be what
// the allreduce reads.
void stream_order_case(tutti::Communicator& comm, cudaStream_t stream) {
  const size_t count = 1 << 20;
  DeviceBytes buf = device_bytes(count * 4);
  check_cuda(cudaMemsetAsync(buf.get(), 0, count * 4, stream), "cudaMemsetAsync");
  // 0x3f800000 is 1.0f: every byte 0x3f would not be; write ones through a host copy instead.
  std::vector<float> ones(count, 1.0f);
  check_cuda(cudaMemcpyAsync(buf.get(), ones.data(), count * 4, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync");
  tutti::CallOptions call;
  call.stream = stream;
  comm.allreduce(buf.get(), buf.get(), count, DataType::kFloat32, ReduceOp::kSum, call);
  std::vector<float> got(count);
  check_cuda(cudaMemcpyAsync(got.data(), buf.get(), count * 4, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (size_t i = 0; i < count; ++i) {
    if (got[i] != static_cast<float>(comm.size())) {
      std::fprintf(stderr, "FAIL: stream order: element %zu is %g, want %d\n", i, got[i],
                   comm.size());
      ++g_failures;
      return;
    }
  }
}

void scale_case(tutti::Communicator& comm, cudaStream_t stream) {
  const size_t count = 4099;
  std::vector<float> input(count, 2.0f), got(count);
  DeviceBytes buf = device_bytes(count * 4);
  check_cuda(cudaMemcpyAsync(buf.get(), input.data(), count * 4, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync");
  tutti::CallOptions call;
  call.stream = stream;
  call.prescale = 0.5;
  call.postscale = 3.0;
  comm.allreduce(buf.get(), buf.get(), count, DataType::kFloat32, ReduceOp::kSum, call);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check_cuda(cudaMemcpyAsync(got.data(), buf.get(), count * 4, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const float want = 3.0f * static_cast<float>(comm.size());  // sum(2 * 0.5) * 3
  for (size_t i = 0; i < count; ++i) {
    if (std::fabs(got[i] - want) > 1e-4f * want) {
      std::fprintf(stderr, "FAIL: prescale/postscale: element %zu is %g, want %g\n", i, got[i],
                   want);
      ++g_failures;
      return;
    }
  }
}

void other_collectives_case(tutti::Communicator& comm, cudaStream_t stream) {
  const int n = comm.size();
  const size_t count = 1001;
  std::vector<int32_t> mine(count), all(count * static_cast<size_t>(n));
  for (size_t i = 0; i < count; ++i) mine[i] = comm.rank() * 100000 + static_cast<int32_t>(i);
  DeviceBytes send = device_bytes(count * 4), recv = device_bytes(all.size() * 4);
  check_cuda(cudaMemcpyAsync(send.get(), mine.data(), count * 4, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync");
  tutti::CallOptions call;
  call.stream = stream;
  comm.allgather(send.get(), recv.get(), count, DataType::kInt32, call);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check_cuda(
      cudaMemcpyAsync(all.data(), recv.get(), all.size() * 4, cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      if (all[static_cast<size_t>(r) * count + i] != r * 100000 + static_cast<int32_t>(i)) {
        std::fprintf(stderr, "FAIL: allgather: rank %d's element %zu\n", r, i);
        ++g_failures;
        return;
      }
  // broadcast from the last rank
  comm.broadcast(send.get(), count, DataType::kInt32, n - 1, call);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check_cuda(cudaMemcpyAsync(mine.data(), send.get(), count * 4, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (size_t i = 0; i < count; ++i)
    if (mine[i] != (n - 1) * 100000 + static_cast<int32_t>(i)) {
      std::fprintf(stderr, "FAIL: broadcast: element %zu\n", i);
      ++g_failures;
      return;
    }
  // reduce_scatter of every rank's `all` (ones): each block sums to n
  std::vector<int32_t> ones(count * static_cast<size_t>(n), 1), block(count);
  check_cuda(
      cudaMemcpyAsync(recv.get(), ones.data(), ones.size() * 4, cudaMemcpyHostToDevice, stream),
      "cudaMemcpyAsync");
  comm.reduce_scatter(recv.get(), send.get(), count, DataType::kInt32, ReduceOp::kSum, call);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check_cuda(cudaMemcpyAsync(block.data(), send.get(), count * 4, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (size_t i = 0; i < count; ++i)
    if (block[i] != n) {
      std::fprintf(stderr, "FAIL: reduce_scatter: element %zu is %d\n", i, block[i]);
      ++g_failures;
      return;
    }
}

int local_rank() {
  for (const char* name : {"TUTTI_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device (%s)\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "cudaGetDeviceCount says 0");
    return 77;
  }
  if (argc > 1 && std::strcmp(argv[1], "--probe") == 0) {
    std::printf("%d\n", devices);
    return 0;
  }
  check_cuda(cudaSetDevice(local_rank() % devices), "cudaSetDevice");
  try {
    tutti::World world;
    tutti::Communicator comm = world.communicator();
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    const int n = comm.size();
    const size_t counts[] = {0, 1, static_cast<size_t>(n > 1 ? n - 1 : 2), 1001,
                             (size_t{1} << 20) + 3};
    for (int t = 0; t < tutti::kNumDataTypes; ++t)
      for (int o = 0; o < tutti::kNumReduceOps; ++o) {
        const auto type = static_cast<DataType>(t);
        const auto op = static_cast<ReduceOp>(o);
        if (!tutti::supports(type, op)) continue;
        for (size_t count : counts)
          for (bool in_place : {false, true})
            allreduce_case(comm, type, op, count, in_place, stream);
      }
    stream_order_case(comm, stream);
    scale_case(comm, stream);
    other_collectives_case(comm, stream);
    cudaStreamDestroy(stream);
    int failures = g_failures;
    comm.allreduce(&failures, &failures, 1, DataType::kInt32, ReduceOp::kSum);
    if (comm.rank() == 0) {
      const char* path = std::getenv("TUTTI_DEVICE_ALLREDUCE");
      if (failures == 0)
        std::printf(
            "device collectives OK (%d ranks, TUTTI_DEVICE_ALLREDUCE=%s, %d refusals of "
            "what NCCL cannot reduce, each checked)\n",
            n, path ? path : "auto", g_refused);
    }
    return failures == 0 ? 0 : 1;
  } catch (const tutti::Error& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
}
