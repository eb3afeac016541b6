// What one rank asks the engine to run for a named tensor, in the form the ranks exchange during
// negotiation: the fields every rank must agree on, and the per-rank parts (an allgather's row
// count, an alltoall's splits) that may differ.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/wire.hpp"
#include "tutti/types.hpp"

namespace tutti::engine {

enum class OpKind : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kReduceScatter = 3,
  kAlltoall = 4,
  kBarrier = 5,
};
inline constexpr int kNumOpKinds = 6;

std::string_view to_string(OpKind kind);

struct OpSpec {
  OpKind kind = OpKind::kAllreduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  // allreduce, reduce_scatter
  int root = -1;                 // broadcast
  double prescale = 1.0;         // allreduce
  double postscale = 1.0;
  // Elements: allreduce and broadcast, the whole tensor; reduce_scatter, each rank's block;
  // allgather and alltoall, one row (the tensor's trailing dimensions).
  uint64_t count = 0;
  // Per rank: allgather, this rank's rows (the first dimension, which may differ between ranks);
  // alltoall, the rows this rank sends to each rank.
  uint64_t rows = 0;
  std::vector<uint64_t> splits;

  // Whether two ranks' specs of one name may run together (the per-rank parts aside).
  bool agrees_with(const OpSpec& other) const;
  // Equal in every field, the per-rank parts included (a cached response is reused only then).
  bool operator==(const OpSpec& other) const = default;
  // "allreduce of 1000 float32 (sum)".
  std::string describe() const;
  // The fields two specs differ in, for a mismatch message: "count 1000 vs 1200".
  std::string difference(const OpSpec& other) const;

  void encode(net::wire::Writer& w) const;
  static OpSpec decode(net::wire::Reader& r, int size);
};

}  // namespace tutti::engine
