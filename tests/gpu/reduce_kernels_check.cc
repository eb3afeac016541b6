// The CUDA reduce kernels (reduce/cuda, through DeviceApi::reduce_async) against the CPU's
// reduce::combine / combine_scaled, bit for bit: every DataType x ReduceOp the kernels take, the
// scaled floating sum, counts 0, 1, odd, large, buffers at aligned, equally misaligned and
// differently misaligned offsets, and in place. Needs a GPU: exits 77 ("no CUDA device", a skip
// for ctest) on a host without one.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/device_api.hpp"
#include "reduce/reduce.hpp"
#include "tutti/error.hpp"
#include "tutti/types.hpp"

namespace {

using tutti::DataType;
using tutti::ReduceOp;
namespace device = tutti::device;

constexpr DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                               DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                               DataType::kUInt8,    DataType::kInt8,    DataType::kInt16,
                               DataType::kBool};
constexpr ReduceOp kOps[] = {ReduceOp::kSum,  ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kBand, ReduceOp::kBor,  ReduceOp::kBxor};
constexpr size_t kCounts[] = {0, 1, 7, 1001, (size_t{1} << 20) + 3};
struct Offsets {
  size_t out, a, b;  // in elements from a 256-byte aligned allocation
};
constexpr Offsets kOffsets[] = {{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {0, 1, 2}, {5, 0, 0}};

int failures = 0;
std::mt19937_64 rng(12345);

// Random values that are finite numbers of the type, some NaN for the floating min/max.
void fill(DataType type, ReduceOp op, std::vector<std::byte>& bytes, size_t count) {
  const size_t size = tutti::element_size(type);
  bytes.resize(count * size);
  for (size_t i = 0; i < count; ++i) {
    std::byte* at = bytes.data() + i * size;
    const uint64_t r = rng();
    const bool nan =
        tutti::is_floating(type) && (op == ReduceOp::kMin || op == ReduceOp::kMax) && r % 97 == 0;
    switch (type) {
      case DataType::kFloat32: {
        const float v =
            nan ? NAN : static_cast<float>(static_cast<int64_t>(r % 20001) - 10000) / 64;
        std::memcpy(at, &v, 4);
        break;
      }
      case DataType::kFloat64: {
        const double v =
            nan ? NAN : static_cast<double>(static_cast<int64_t>(r % 2000001) - 1000000) / 1024;
        std::memcpy(at, &v, 8);
        break;
      }
      case DataType::kFloat16: {  // exponents 10..20 of 31: finite, no overflow in a product
        const uint16_t v = nan ? 0x7e00
                               : static_cast<uint16_t>(((r >> 20) & 0x8000) |
                                                       ((10 + r % 11) << 10) | ((r >> 8) & 0x3ff));
        std::memcpy(at, &v, 2);
        break;
      }
      case DataType::kBFloat16: {  // exponents 120..134 of 255
        const uint16_t v = nan ? 0x7fc0
                               : static_cast<uint16_t>(((r >> 20) & 0x8000) |
                                                       ((120 + r % 15) << 7) | ((r >> 8) & 0x7f));
        std::memcpy(at, &v, 2);
        break;
      }
      case DataType::kBool: {
        const uint8_t v = static_cast<uint8_t>(r % 3 == 0 ? 0 : (r % 5 == 0 ? 2 : 1));
        std::memcpy(at, &v, 1);
        break;
      }
      default:  // integers: every bit pattern, so sums and products wrap
        std::memcpy(at, &r, size);
    }
  }
}

bool is_nan(DataType type, const std::byte* p) {
  switch (type) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return std::isnan(v);
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return std::isnan(v);
    }
    case DataType::kFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return (v & 0x7c00) == 0x7c00 && (v & 0x3ff) != 0;
    }
    case DataType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return (v & 0x7f80) == 0x7f80 && (v & 0x7f) != 0;
    }
    default:
      return false;
  }
}

void synchronize(device::DeviceApi& api, device::StreamId stream, int dev) {
  device::Event done(dev);
  api.record(done.id(), stream);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!api.query(done.id())) {
    if (std::chrono::steady_clock::now() > deadline)
      throw tutti::Error(tutti::ErrorCode::kTimeout, "the reduce kernel did not finish in 60 s");
  }
}

struct Scales {
  double a, b, post;
  int divisor = 1;  // integer sum only: an integer avg's last step
};

void check(device::DeviceApi& api, device::StreamId stream, int dev, DataType type, ReduceOp op,
           Scales scales, size_t count, Offsets off, bool in_place) {
  const size_t size = tutti::element_size(type);
  std::vector<std::byte> a, b;
  fill(type, op, a, count);
  fill(type, op, b, count);
  const size_t span = (count + 8) * size;
  device::Buffer da(span, dev), db(span, dev), dout(span, dev);
  std::byte* pa = static_cast<std::byte*>(da.data()) + off.a * size;
  std::byte* pb = static_cast<std::byte*>(db.data()) + off.b * size;
  std::byte* pout = in_place ? pa : static_cast<std::byte*>(dout.data()) + off.out * size;
  api.copy_async(pa, a.data(), a.size(), stream);
  api.copy_async(pb, b.data(), b.size(), stream);
  device::ReduceArgs args;
  args.out = pout;
  args.a = pa;
  args.b = pb;
  args.count = count;
  args.type = type;
  args.op = op;
  args.scale_a = scales.a;
  args.scale_b = scales.b;
  args.post = scales.post;
  args.divisor = scales.divisor;
  api.reduce_async(args, stream);
  std::vector<std::byte> got(count * size);
  api.copy_async(got.data(), pout, got.size(), stream);
  synchronize(api, stream, dev);

  std::vector<std::byte> want(count * size);
  const bool scaled = scales.a != 1 || scales.b != 1 || scales.post != 1;
  if (scaled)
    tutti::reduce::combine_scaled(type, want.data(), a.data(), scales.a, b.data(), scales.b,
                                  scales.post, count);
  else
    tutti::reduce::combine(type, op, want.data(), a.data(), b.data(), count);
  if (scales.divisor != 1) tutti::reduce::divide(type, want.data(), count, scales.divisor);
  for (size_t i = 0; i < count; ++i) {
    const std::byte* g = got.data() + i * size;
    const std::byte* w = want.data() + i * size;
    if (std::memcmp(g, w, size) == 0 || (is_nan(type, g) && is_nan(type, w))) continue;
    std::printf(
        "FAIL: %s %s scales (%g, %g, %g) count %zu offsets (%zu, %zu, %zu)%s: element %zu "
        "differs from the CPU's\n",
        std::string(tutti::to_string(type)).c_str(), std::string(tutti::to_string(op)).c_str(),
        scales.a, scales.b, scales.post, count, off.out, off.a, off.b,
        scales.divisor != 1 ? " divided" : (in_place ? " in place" : ""), i);
    ++failures;
    return;
  }
}

}  // namespace

int main() {
  device::DeviceApi& api = device::api();
  if (api.device_count() == 0) {
    std::printf("SKIP: no CUDA device (DeviceApi '%s')\n", std::string(api.name()).c_str());
    return 77;
  }
  try {
    const int dev = 0;
    device::Stream stream(dev);
    int cases = 0;
    for (DataType type : kTypes) {
      for (ReduceOp op : kOps) {
        const bool bitwise = op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
        if (bitwise && tutti::is_floating(type)) continue;
        std::vector<Scales> scale_sets = {{1, 1, 1}};
        if (op == ReduceOp::kSum && tutti::is_floating(type))
          scale_sets.push_back({0.5, 2.0, 0.25}), scale_sets.push_back({1, 1, 1.0 / 3});
        // The device ring's integer avg: the sum divided by the world size, truncating.
        if (op == ReduceOp::kSum && !tutti::is_floating(type) && type != DataType::kBool)
          scale_sets.push_back({1, 1, 1, 3}), scale_sets.push_back({1, 1, 1, 7});
        for (const Scales& scales : scale_sets)
          for (size_t count : kCounts)
            for (const Offsets& off : kOffsets) {
              check(api, stream.id(), dev, type, op, scales, count, off, false);
              ++cases;
            }
        check(api, stream.id(), dev, type, op, {1, 1, 1}, 1001, {0, 0, 0}, true);
        ++cases;
      }
    }
    if (failures > 0) {
      std::printf("%d of %d cases differ\n", failures, cases);
      return 1;
    }
    std::printf("reduce kernels OK: %d cases match the CPU\n", cases);
    return 0;
  } catch (const tutti::Error& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
