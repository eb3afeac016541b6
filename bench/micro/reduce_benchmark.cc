// Throughput of reduce::accumulate (dst += src), the kernel every allreduce step runs. Sizes span
// L1 (4 KiB), L2 (256 KiB) and DRAM (64 MiB); bytes/s counts the dst buffer's size once per call
// (the memory traffic is three times that: read dst, read src, write dst).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "reduce/half.hpp"
#include "reduce/reduce.hpp"
#include "tutti/types.hpp"

namespace {

template <tutti::DataType Type>
void BM_AccumulateSum(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / tutti::element_size(Type);
  // Values that stay finite however many iterations run, so the FPU never takes a slow path.
  std::vector<std::byte> dst(bytes);
  std::vector<std::byte> src(bytes);
  if constexpr (Type == tutti::DataType::kFloat32) {
    auto* d = reinterpret_cast<float*>(dst.data());
    auto* s = reinterpret_cast<float*>(src.data());
    for (size_t i = 0; i < count; ++i) d[i] = 1.0f, s[i] = 0.0f;
  } else if constexpr (Type == tutti::DataType::kBFloat16) {
    auto* d = reinterpret_cast<uint16_t*>(dst.data());
    auto* s = reinterpret_cast<uint16_t*>(src.data());
    for (size_t i = 0; i < count; ++i) d[i] = tutti::reduce::float_to_bf16(1.0f), s[i] = 0;
  } else {
    auto* d = reinterpret_cast<uint16_t*>(dst.data());
    auto* s = reinterpret_cast<uint16_t*>(src.data());
    for (size_t i = 0; i < count; ++i) d[i] = tutti::reduce::float_to_f16(1.0f), s[i] = 0;
  }
  for (auto _ : state) {
    tutti::reduce::accumulate(Type, tutti::ReduceOp::kSum, dst.data(), src.data(), count);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(std::string(tutti::to_string(Type)));
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(4 << 10)->Arg(256 << 10)->Arg(64 << 20);
}

BENCHMARK_TEMPLATE(BM_AccumulateSum, tutti::DataType::kFloat32)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AccumulateSum, tutti::DataType::kBFloat16)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AccumulateSum, tutti::DataType::kFloat16)->Apply(Sizes);

// reduce_many as the shm allreduce runs it: range(1) float32 sources of range(0) bytes each into
// an output plus a copy (the window), range(2) = 1 for streaming stores into the copy. bytes/s
// counts one source's size per call.
void BM_ReduceManyFloat(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto nsrc = static_cast<size_t>(state.range(1));
  const auto stores = state.range(2) != 0 ? tutti::reduce::CopyStores::kStreaming
                                          : tutti::reduce::CopyStores::kCached;
  const size_t count = bytes / sizeof(float);
  std::vector<std::vector<float>> srcs(nsrc, std::vector<float>(count, 0.0f));
  std::vector<float> out(count, 0.0f), copy(count, 0.0f);
  std::vector<const void*> pointers;
  for (auto& s : srcs) pointers.push_back(s.data());
  for (auto _ : state) {
    tutti::reduce::reduce_many(tutti::DataType::kFloat32, tutti::ReduceOp::kSum, out.data(),
                               copy.data(), pointers, count, stores);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

BENCHMARK(BM_ReduceManyFloat)->ArgsProduct({{256 << 10, 64 << 20}, {2, 4}, {0, 1}});

// What out of place costs against in place on this machine's memory, the bound on tutti's
// out-of-place/in-place ratio: out = a + b with out = a (range(1) = 0, in place), out a third
// buffer written with cached stores (1: each out line is read before it is overwritten), or with
// streaming stores (2). bytes/s counts one buffer's size per call.
void BM_OutOfPlaceSum(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto how = state.range(1);
  const size_t count = bytes / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 0.0f), c(count, 0.0f);
  const void* srcs[] = {a.data(), b.data()};
  float* out = how == 0 ? a.data() : c.data();
  const auto stores =
      how == 2 ? tutti::reduce::CopyStores::kStreaming : tutti::reduce::CopyStores::kCached;
  for (auto _ : state) {
    tutti::reduce::reduce_many(tutti::DataType::kFloat32, tutti::ReduceOp::kSum, out, nullptr, srcs,
                               count, tutti::reduce::CopyStores::kCached, stores);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(how == 0   ? "in place"
                 : how == 1 ? "out of place, cached"
                            : "out of place, streaming");
}

BENCHMARK(BM_OutOfPlaceSum)->ArgsProduct({{1 << 20, 4 << 20, 16 << 20, 64 << 20}, {0, 1, 2}});

// memcpy against stream_copy, the two ways the shm allreduce stages its input.
void BM_Copy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<std::byte> src(bytes, std::byte{1}), dst(bytes);
  for (auto _ : state) {
    if (state.range(1) != 0) {
      tutti::reduce::stream_copy(dst.data(), src.data(), bytes);
    } else {
      std::memcpy(dst.data(), src.data(), bytes);
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

BENCHMARK(BM_Copy)->ArgsProduct({{256 << 10, 64 << 20}, {0, 1}});

}  // namespace

BENCHMARK_MAIN();
