// The scaled sum behind allreduce's prescale and postscale: every factor is applied inside the
// loop that reads or reduces the data, so scaling costs no pass over memory of its own. Blocks
// are loaded into an aligned buffer of the type's arithmetic precision (float for float16 and
// bfloat16, rounded once when stored), which also makes misaligned and exactly aliased buffers
// safe: a block of every input is read before that block of the output is written.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "reduce/half.hpp"
#include "reduce/reduce.hpp"
#include "reduce/stream_stores.hpp"

namespace tutti::reduce {
namespace {

constexpr size_t kBlock = 256;

template <typename W>
struct PlainCodec {
  using Wide = W;
  static constexpr size_t kBytes = sizeof(W);
  static void load(const std::byte* src, W* out, size_t n) { std::memcpy(out, src, n * kBytes); }
  static void store(const W* in, std::byte* dst, size_t n) { std::memcpy(dst, in, n * kBytes); }
};

template <void (*Widen)(const uint16_t*, float*, size_t),
          void (*Narrow)(const float*, uint16_t*, size_t)>
struct HalfCodec {
  using Wide = float;
  static constexpr size_t kBytes = 2;
  static void load(const std::byte* src, float* out, size_t n) {
    alignas(64) uint16_t raw[kBlock];
    std::memcpy(raw, src, n * kBytes);
    Widen(raw, out, n);
  }
  static void store(const float* in, std::byte* dst, size_t n) {
    alignas(64) uint16_t raw[kBlock];
    Narrow(in, raw, n);
    std::memcpy(dst, raw, n * kBytes);
  }
};

template <typename Codec>
struct Scaled {
  using W = typename Codec::Wide;

  static void combine(std::byte* dst, const std::byte* a, double sa, const std::byte* b, double sb,
                      double so, size_t count) {
    alignas(64) W x[kBlock];
    alignas(64) W y[kBlock];
    const W fa = static_cast<W>(sa), fb = static_cast<W>(sb), fo = static_cast<W>(so);
    for (size_t done = 0; done < count; done += kBlock) {
      const size_t n = std::min(kBlock, count - done), at = done * Codec::kBytes;
      Codec::load(a + at, x, n);
      Codec::load(b + at, y, n);
      for (size_t i = 0; i < n; ++i) x[i] = (x[i] * fa + y[i] * fb) * fo;
      Codec::store(x, dst + at, n);
    }
  }

  static void scale(std::byte* dst, const std::byte* src, double factor, size_t count) {
    alignas(64) W x[kBlock];
    const W f = static_cast<W>(factor);
    for (size_t done = 0; done < count; done += kBlock) {
      const size_t n = std::min(kBlock, count - done), at = done * Codec::kBytes;
      Codec::load(src + at, x, n);
      for (size_t i = 0; i < n; ++i) x[i] *= f;
      Codec::store(x, dst + at, n);
    }
  }

  static void many(std::byte* out, std::byte* copy, const void* const* srcs, size_t nsrc,
                   size_t count, double pre, double post, bool stream, bool stream_out) {
    alignas(64) W acc[kBlock];
    alignas(64) W next[kBlock];
    // With streaming out, each block is encoded here first and streamed to out and copy from here.
    alignas(64) std::byte encoded[kBlock * Codec::kBytes];
    const W fp = static_cast<W>(pre), fo = static_cast<W>(post);
    for (size_t done = 0; done < count; done += kBlock) {
      const size_t n = std::min(kBlock, count - done), at = done * Codec::kBytes;
      Codec::load(static_cast<const std::byte*>(srcs[0]) + at, acc, n);
      for (size_t i = 0; i < n; ++i) acc[i] *= fp;
      for (size_t k = 1; k < nsrc; ++k) {
        Codec::load(static_cast<const std::byte*>(srcs[k]) + at, next, n);
        for (size_t i = 0; i < n; ++i) acc[i] += next[i] * fp;
      }
      for (size_t i = 0; i < n; ++i) acc[i] *= fo;
      const std::byte* result = out + at;
      if (stream_out) {
        Codec::store(acc, encoded, n);
        stream_copy_unfenced(out + at, encoded, n * Codec::kBytes);
        result = encoded;
      } else {
        Codec::store(acc, out + at, n);
      }
      if (copy != nullptr) {
        if (stream) {
          stream_copy_unfenced(copy + at, result, n * Codec::kBytes);
        } else {
          std::memcpy(copy + at, result, n * Codec::kBytes);
        }
      }
    }
    if (stream_out || (copy != nullptr && stream)) store_fence();
  }
};

// Calls f.template operator()<Codec>() for the floating type; integers are refused.
template <typename F>
void dispatch(std::string_view call, DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat32:
      return f.template operator()<PlainCodec<float>>();
    case DataType::kFloat64:
      return f.template operator()<PlainCodec<double>>();
    case DataType::kFloat16:
      return f.template operator()<HalfCodec<widen_f16, narrow_f16>>();
    case DataType::kBFloat16:
      return f.template operator()<HalfCodec<widen_bf16, narrow_bf16>>();
    default:
      throw make_error(ErrorCode::kInvalidArgument,
                       "reduce::{}: scaling is defined on floating types only, not {}", call,
                       to_string(type));
  }
}

}  // namespace

void combine_scaled(DataType type, void* dst, const void* a, double a_scale, const void* b,
                    double b_scale, double out_scale, size_t count) {
  if (count == 0) return;
  dispatch("combine_scaled", type, [&]<typename Codec>() {
    Scaled<Codec>::combine(static_cast<std::byte*>(dst), static_cast<const std::byte*>(a), a_scale,
                           static_cast<const std::byte*>(b), b_scale, out_scale, count);
  });
}

void scale(DataType type, void* dst, const void* src, double factor, size_t count) {
  if (count == 0) return;
  dispatch("scale", type, [&]<typename Codec>() {
    Scaled<Codec>::scale(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), factor,
                         count);
  });
}

void reduce_many_scaled(DataType type, void* out, void* copy, std::span<const void* const> srcs,
                        size_t count, double pre, double post, CopyStores stores,
                        CopyStores out_stores) {
  if (srcs.empty())
    throw make_error(ErrorCode::kInvalidArgument,
                     "reduce::reduce_many_scaled: no sources for {} elements; pass at least one",
                     count);
  if (count == 0) return;
  dispatch("reduce_many_scaled", type, [&]<typename Codec>() {
    Scaled<Codec>::many(static_cast<std::byte*>(out), static_cast<std::byte*>(copy), srcs.data(),
                        srcs.size(), count, pre, post, stores == CopyStores::kStreaming,
                        out_stores == CopyStores::kStreaming);
  });
}

}  // namespace tutti::reduce
