#include "unit/collectives/support/aliased_segments.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "unit/collectives/support/values.hpp"

namespace tutti::testing {
namespace {

using collectives::Segment;

constexpr DataType kType = DataType::kFloat32;
constexpr ReduceOp kOp = ReduceOp::kSum;

std::vector<std::byte> inputs(int rank, size_t count, size_t first) {
  return make_buffer(kType, count, [&](size_t i) { return input_value(kOp, rank, first + i); });
}

void expect(const void* buf, size_t count, size_t first, int size, const std::string& label) {
  const std::string error = check_buffer(
      kType, kOp, buf, count, [&](size_t i) { return expected_value(kType, kOp, size, first + i); },
      label);
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace

void check_aliased_segments(const std::function<collectives::Context()>& next_context, int rank,
                            int size, collectives::Algorithm algorithm, size_t count) {
  const std::string where = fmt::format("{} allreduce_segments, rank {} of {}, {} elements",
                                        collectives::to_string(algorithm), rank, size, count);
  std::vector<std::byte> pack;
  {
    // One buffer in place under two names: both hold the sum of its input.
    auto buf = inputs(rank, count, 0);
    const std::vector<Segment> twice{{buf.data(), buf.data(), count},
                                     {buf.data(), buf.data(), count}};
    collectives::Context ctx = next_context();
    collectives::allreduce_segments(ctx, algorithm, twice, kType, kOp, pack);
    expect(buf.data(), count, 0, size, where + ", one buffer under two names");
  }
  {
    // a -> m, then m -> b: b holds the sum of m's input (the logical positions count..), and m
    // the sum of a's.
    auto a = inputs(rank, count, 0);
    auto m = inputs(rank, count, count);
    std::vector<std::byte> b(m.size(), std::byte{0xee});
    const std::vector<Segment> chain{{a.data(), m.data(), count}, {m.data(), b.data(), count}};
    collectives::Context ctx = next_context();
    collectives::allreduce_segments(ctx, algorithm, chain, kType, kOp, pack);
    expect(b.data(), count, count, size, where + ", the second tensor reads the first's output");
    expect(m.data(), count, 0, size, where + ", the first tensor's output");
  }
}

}  // namespace tutti::testing
