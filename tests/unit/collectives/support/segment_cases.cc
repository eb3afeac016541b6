#include "unit/collectives/support/segment_cases.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "unit/collectives/support/thread_channel.hpp"
#include "unit/collectives/support/values.hpp"

namespace tutti::testing {
namespace {

using collectives::Segment;

struct Layout {
  std::vector<size_t> counts;  // elements of each tensor, in order
  size_t segment_bytes;
};

std::vector<Layout> layouts(int size) {
  std::vector<size_t> many(40, 13);
  many[7] = 0;
  return {
      {{0}, 64},
      {{1}, 64},
      {{static_cast<size_t>(size - 1), 0, 1}, 64},
      {{3, 0, 5, 1, 7}, 8},                // segments of one element or two: a piece per element
      {many, 64},                          // segments within a tensor and across its end
      {many, 4096},                        // one segment spans many tensors
      {{1000, 3, 20001, 1, 0, 77}, 1000},  // segments not a whole number of 8-byte elements
  };
}

}  // namespace

void check_segment_cases(const std::function<collectives::Context(size_t)>& next_context, int rank,
                         int size, DataType type, collectives::Algorithm algorithm,
                         const std::function<bool(size_t)>& should_pack, const std::string& who) {
  std::vector<std::byte> pack;
  for (const Layout& layout : layouts(size)) {
    for (ReduceOp op : kAllOps) {
      for (bool in_place : {true, false}) {
        // Each tensor its own allocation, holding input_value of its elements' positions in the
        // logical vector.
        std::vector<std::vector<std::byte>> sends;
        size_t total = 0;
        for (size_t count : layout.counts) {
          sends.push_back(
              make_buffer(type, count, [&](size_t i) { return input_value(op, rank, total + i); }));
          total += count;
        }
        const auto originals = sends;
        std::vector<std::vector<std::byte>> recvs;
        std::vector<Segment> segments;
        for (auto& t : sends) {
          recvs.emplace_back(in_place ? 0 : t.size(), std::byte{0xee});
          void* out = in_place ? t.data() : recvs.back().data();
          segments.push_back({t.data(), out, t.size() / element_size(type)});
        }
        collectives::Context ctx = next_context(layout.segment_bytes);
        const collectives::SegmentsRun run =
            collectives::allreduce_segments(ctx, algorithm, segments, type, op, pack);
        const std::string label = fmt::format(
            "{} allreduce_segments, rank {} of {}{}, {} {}, {} tensors of {} elements, segment "
            "{} B, {}",
            collectives::to_string(algorithm), rank, size, who, to_string(type), to_string(op),
            layout.counts.size(), total, layout.segment_bytes,
            in_place ? "in place" : "out of place");
        if (run.packed != should_pack(total))
          throw std::runtime_error(
              fmt::format("{}: packed {}, expected {}", label, run.packed, should_pack(total)));
        size_t at = 0;
        for (size_t t = 0; t < segments.size(); ++t) {
          const size_t base = at;
          auto error = check_buffer(
              type, op, segments[t].recv, segments[t].count,
              [&](size_t i) { return expected_value(type, op, size, base + i); },
              fmt::format("{}, tensor {}", label, t));
          if (!error.empty()) throw std::runtime_error(error);
          at += segments[t].count;
        }
        if (!in_place && sends != originals)
          throw std::runtime_error(label + ": a send tensor was modified");
      }
    }
  }
}

void refuse_pieces(transport::Transport& transport, int rank, int size) {
  for (int peer = 0; peer < size; ++peer)
    if (peer != rank) dynamic_cast<ThreadChannel&>(transport.channel(peer)).refuse_pieces();
}

std::string check_scaled_segments(collectives::Context ctx, collectives::Algorithm algorithm,
                                  int rank, int size) {
  std::vector<float> a(37, float(rank + 1)), b(0), c(1000, 1.0f);
  std::vector<Segment> segments{
      {a.data(), a.data(), a.size()}, {b.data(), b.data(), 0}, {c.data(), c.data(), c.size()}};
  std::vector<std::byte> pack;
  ctx.prescale = 0.5;
  ctx.postscale = 4.0;
  const collectives::SegmentsRun run = collectives::allreduce_segments(
      ctx, algorithm, segments, DataType::kFloat32, ReduceOp::kSum, pack);
  const float rank_sum = static_cast<float>(size * (size + 1) / 2);
  if (run.packed) return "packed although every channel takes pieces";
  for (float v : a)
    if (v != rank_sum * 2.0f) return fmt::format("a: {} != {}", v, rank_sum * 2.0f);
  for (float v : c)
    if (v != static_cast<float>(size) * 2.0f) return fmt::format("c: {}", v);
  return {};
}

}  // namespace tutti::testing
