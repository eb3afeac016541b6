// The CUDA kernels behind reduce_kernels.hpp: one grid-stride kernel template per (element type,
// op), instantiated once for each pair the runtime can ask for (63 in all; bitwise ops exist only
// for integers, the scaled variant only for floating sums, the divided one for integer sums), so
// the file compiles in reasonable time for every architecture in CMAKE_CUDA_ARCHITECTURES.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "reduce/cuda/reduce_kernels.hpp"

namespace tutti::reduce::cuda {

namespace {

// ---- Element types: what a value is stored as, what it is computed in. ----

// float16 and bfloat16 are widened to float, reduced, and narrowed with round-to-nearest-even,
// like the CPU path; every other type computes in itself.
template <typename T>
struct Widened {
  using type = T;
};
template <>
struct Widened<__half> {
  using type = float;
};
template <>
struct Widened<__nv_bfloat16> {
  using type = float;
};
template <typename T>
using WidenedT = typename Widened<T>::type;

template <typename T>
__device__ __forceinline__ WidenedT<T> widen(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

template <typename T>
__device__ __forceinline__ T narrow(WidenedT<T> v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}

// ---- Ops, on the computed type (reduce/ops.hpp's meanings, as device code). ----

// Integer sum/prod wrap modulo 2^bits; signed overflow is undefined in C++ (nvcc optimises on it
// too), so they run on unsigned values at least as wide as unsigned int.
template <typename C>
using Wrap = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;

struct Sum {
  template <typename C>
  __device__ static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(static_cast<Wrap<C>>(a) + static_cast<Wrap<C>>(b));
    } else {
      return a + b;
    }
  }
};
struct Prod {
  template <typename C>
  __device__ static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(static_cast<Wrap<C>>(a) * static_cast<Wrap<C>>(b));
    } else {
      return a * b;
    }
  }
};
// NaN in either input gives NaN (as the CPU path, torch and NCCL): the result must not depend on
// which rank's value came first. Between equal values the result is b.
struct Min {
  template <typename C>
  __device__ static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
      return ((a < b) || (a != a)) ? a : b;
    } else {
      return a < b ? a : b;
    }
  }
};
struct Max {
  template <typename C>
  __device__ static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
      return ((a > b) || (a != a)) ? a : b;
    } else {
      return a > b ? a : b;
    }
  }
};
struct Band {
  template <typename C>
  __device__ static C apply(C a, C b) {
    return static_cast<C>(a & b);
  }
};
struct Bor {
  template <typename C>
  __device__ static C apply(C a, C b) {
    return static_cast<C>(a | b);
  }
};
struct Bxor {
  template <typename C>
  __device__ static C apply(C a, C b) {
    return static_cast<C>(a ^ b);
  }
};
// bool is one byte; any non-zero byte is true and every result is 0 or 1.
struct LogicalOr {
  __device__ static uint8_t apply(uint8_t a, uint8_t b) { return (a | b) != 0; }
};
struct LogicalAnd {
  __device__ static uint8_t apply(uint8_t a, uint8_t b) { return (a != 0) & (b != 0); }
};
struct LogicalXor {
  __device__ static uint8_t apply(uint8_t a, uint8_t b) { return (a != 0) ^ (b != 0); }
};

// What one element of the output is.
template <typename T, typename Op>
struct Plain {
  __device__ T operator()(T a, T b) const { return narrow<T>(Op::apply(widen(a), widen(b))); }
};

// (a * scale_a + b * scale_b) * post, in float (double for float64), rounded once when stored:
// reduce::combine_scaled's arithmetic. Only for floating sums whose scales are not all 1. The
// explicitly rounded intrinsics keep nvcc from contracting a multiply and an add into one fma,
// whose single rounding would differ from the CPU's result in the last bit.
__device__ __forceinline__ float mul(float x, float y) {
  return __fmul_rn(x, y);
}
__device__ __forceinline__ float add(float x, float y) {
  return __fadd_rn(x, y);
}
__device__ __forceinline__ double mul(double x, double y) {
  return __dmul_rn(x, y);
}
__device__ __forceinline__ double add(double x, double y) {
  return __dadd_rn(x, y);
}

template <typename T>
struct ScaledSum {
  using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
  S scale_a;
  S scale_b;
  S post;
  __device__ T operator()(T a, T b) const {
    const S sum =
        add(mul(static_cast<S>(widen(a)), scale_a), mul(static_cast<S>(widen(b)), scale_b));
    return narrow<T>(static_cast<WidenedT<T>>(mul(sum, post)));
  }
};

// An integer avg's last step: the wrapped sum, divided in at least int and truncated toward zero
// (reduce/loops.hpp's divide_loop), so that the device ring's integer avg is the host path's.
template <typename T>
struct DividedSum {
  using Wide = std::common_type_t<T, int>;
  Wide divisor;
  __device__ T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Wide>(Sum::apply(a, b)) / divisor);
  }
};

// ---- The kernel. ----

constexpr int kThreads = 256;
constexpr size_t kVectorBytes = 16;  // one 128-bit load or store per thread and step

template <typename T>
struct alignas(kVectorBytes) Pack {
  static constexpr int kLanes = static_cast<int>(kVectorBytes / sizeof(T));
  T lane[kLanes];
};

// Elements [head, head + packs * lanes) go as 16-byte packs (every pointer is 16-byte aligned
// there); the elements before and after them one at a time. head = packs = 0 when the buffers'
// alignments differ, and then every element goes one at a time.
template <typename T, typename F>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(T* out, const T* a, const T* b, size_t count, size_t head, size_t packs, F f) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  using P = Pack<T>;
  auto* out_packs = reinterpret_cast<P*>(out + head);
  const auto* a_packs = reinterpret_cast<const P*>(a + head);
  const auto* b_packs = reinterpret_cast<const P*>(b + head);
  for (size_t p = first; p < packs; p += stride) {
    const P x = a_packs[p];
    const P y = b_packs[p];
    P z;
#pragma unroll
    for (int k = 0; k < P::kLanes; ++k) z.lane[k] = f(x.lane[k], y.lane[k]);
    out_packs[p] = z;
  }
  const size_t tail = head + packs * P::kLanes;
  for (size_t i = first; i < head; i += stride) out[i] = f(a[i], b[i]);
  for (size_t i = tail + first; i < count; i += stride) out[i] = f(a[i], b[i]);
}

// Blocks per SM that keep a memory-bound kernel's loads in flight; beyond them the grid-stride
// loop takes over (a bigger grid only adds scheduling).
constexpr int kBlocksPerSm = 8;

int multiprocessors() {
  int device = 0;
  int sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      sms <= 0) {
    (void)cudaGetLastError();
    return 80;  // the launch below reports the real problem, if any
  }
  return sms;
}

template <typename T, typename F>
int launch(const DeviceReduce& r, cudaStream_t stream, F f) {
  auto* out = static_cast<T*>(r.out);
  const auto* a = static_cast<const T*>(r.a);
  const auto* b = static_cast<const T*>(r.b);
  constexpr size_t lanes = Pack<T>::kLanes;
  // Packs need the three buffers at the same offset from a 16-byte boundary (then `head` elements
  // bring all of them onto one); a buffer at another offset goes one element at a time.
  const auto misalign = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % kVectorBytes; };
  size_t head = 0;
  size_t packs = 0;
  if (misalign(out) == misalign(a) && misalign(a) == misalign(b) && misalign(a) % sizeof(T) == 0) {
    head = ((kVectorBytes - misalign(a)) % kVectorBytes) / sizeof(T);
    if (head > r.count) head = r.count;
    packs = (r.count - head) / lanes;
  }
  const size_t work = packs + (r.count - packs * lanes);  // threads' worth of steps
  const size_t wanted = (work + kThreads - 1) / kThreads;
  const size_t most = static_cast<size_t>(multiprocessors()) * kBlocksPerSm;
  const unsigned blocks = static_cast<unsigned>(wanted < most ? wanted : most);
  reduce_kernel<T><<<blocks, kThreads, 0, stream>>>(out, a, b, r.count, head, packs, f);
  return static_cast<int>(cudaGetLastError());
}

template <typename T, typename Op>
int launch_plain(const DeviceReduce& r, cudaStream_t stream) {
  return launch<T>(r, stream, Plain<T, Op>{});
}

template <typename T>
int launch_floating(const DeviceReduce& r, cudaStream_t stream) {
  switch (r.op) {
    case ReduceOp::kSum:
      // The multiplies are skipped unless a scale asks for them.
      if (r.scale_a != 1.0 || r.scale_b != 1.0 || r.post != 1.0) {
        using S = typename ScaledSum<T>::S;
        return launch<T>(r, stream,
                         ScaledSum<T>{static_cast<S>(r.scale_a), static_cast<S>(r.scale_b),
                                      static_cast<S>(r.post)});
      }
      return launch_plain<T, Sum>(r, stream);
    case ReduceOp::kProd:
      return launch_plain<T, Prod>(r, stream);
    case ReduceOp::kMin:
      return launch_plain<T, Min>(r, stream);
    case ReduceOp::kMax:
      return launch_plain<T, Max>(r, stream);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

template <typename T>
int launch_integer(const DeviceReduce& r, cudaStream_t stream) {
  switch (r.op) {
    case ReduceOp::kSum:
      if (r.divisor != 1)
        return launch<T>(r, stream,
                         DividedSum<T>{static_cast<typename DividedSum<T>::Wide>(r.divisor)});
      return launch_plain<T, Sum>(r, stream);
    case ReduceOp::kProd:
      return launch_plain<T, Prod>(r, stream);
    case ReduceOp::kMin:
      return launch_plain<T, Min>(r, stream);
    case ReduceOp::kMax:
      return launch_plain<T, Max>(r, stream);
    case ReduceOp::kBand:
      return launch_plain<T, Band>(r, stream);
    case ReduceOp::kBor:
      return launch_plain<T, Bor>(r, stream);
    case ReduceOp::kBxor:
      return launch_plain<T, Bxor>(r, stream);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

int launch_bool(const DeviceReduce& r, cudaStream_t stream) {
  switch (r.op) {
    case ReduceOp::kSum:
    case ReduceOp::kMax:
    case ReduceOp::kBor:
      return launch_plain<uint8_t, LogicalOr>(r, stream);
    case ReduceOp::kProd:
    case ReduceOp::kMin:
    case ReduceOp::kBand:
      return launch_plain<uint8_t, LogicalAnd>(r, stream);
    case ReduceOp::kBxor:
      return launch_plain<uint8_t, LogicalXor>(r, stream);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace

int launch_reduce(const DeviceReduce& r, void* stream_handle) {
  if (r.count == 0) return static_cast<int>(cudaSuccess);
  auto stream = static_cast<cudaStream_t>(stream_handle);
  switch (r.type) {
    case DataType::kFloat32:
      return launch_floating<float>(r, stream);
    case DataType::kFloat64:
      return launch_floating<double>(r, stream);
    case DataType::kFloat16:
      return launch_floating<__half>(r, stream);
    case DataType::kBFloat16:
      return launch_floating<__nv_bfloat16>(r, stream);
    case DataType::kInt32:
      return launch_integer<int32_t>(r, stream);
    case DataType::kInt64:
      return launch_integer<int64_t>(r, stream);
    case DataType::kUInt8:
      return launch_integer<uint8_t>(r, stream);
    case DataType::kInt8:
      return launch_integer<int8_t>(r, stream);
    case DataType::kInt16:
      return launch_integer<int16_t>(r, stream);
    case DataType::kBool:
      return launch_bool(r, stream);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace tutti::reduce::cuda
