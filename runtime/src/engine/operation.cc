#include "engine/operation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "transport/call_signature.hpp"

namespace tutti::engine {

std::string_view to_string(OpKind kind) {
  // The names are the transport's one table of them; only the mapping of kinds lives here.
  switch (kind) {
    case OpKind::kAllreduce:
      return transport::kind_name(transport::CallKind::kAllreduce);
    case OpKind::kAllgather:
      return transport::kind_name(transport::CallKind::kAllgather);
    case OpKind::kBroadcast:
      return transport::kind_name(transport::CallKind::kBroadcast);
    case OpKind::kReduceScatter:
      return transport::kind_name(transport::CallKind::kReduceScatter);
    case OpKind::kAlltoall:
      return transport::kind_name(transport::CallKind::kAlltoall);
    case OpKind::kBarrier:
      return transport::kind_name(transport::CallKind::kBarrier);
  }
  return "?";
}

namespace {

bool reduces(OpKind kind) {
  return kind == OpKind::kAllreduce || kind == OpKind::kReduceScatter;
}

}  // namespace

bool OpSpec::agrees_with(const OpSpec& o) const {
  if (kind != o.kind) return false;
  if (kind == OpKind::kBarrier) return true;
  if (type != o.type || count != o.count) return false;
  if (reduces(kind) && op != o.op) return false;
  if (kind == OpKind::kAllreduce && (prescale != o.prescale || postscale != o.postscale))
    return false;
  if (kind == OpKind::kBroadcast && root != o.root) return false;
  if (kind == OpKind::kAlltoall && splits.size() != o.splits.size()) return false;
  return true;
}

std::string OpSpec::describe() const {
  switch (kind) {
    case OpKind::kAllreduce:
      if (prescale != 1.0 || postscale != 1.0)
        return fmt::format("allreduce of {} {} ({}, prescale {}, postscale {})", count,
                           tutti::to_string(type), tutti::to_string(op), prescale, postscale);
      return fmt::format("allreduce of {} {} ({})", count, tutti::to_string(type),
                         tutti::to_string(op));
    case OpKind::kAllgather:
      return fmt::format("allgather of {} rows of {} {}", rows, count, tutti::to_string(type));
    case OpKind::kBroadcast:
      return fmt::format("broadcast of {} {} from rank {}", count, tutti::to_string(type), root);
    case OpKind::kReduceScatter:
      return fmt::format("reduce_scatter of {} {} per rank ({})", count, tutti::to_string(type),
                         tutti::to_string(op));
    case OpKind::kAlltoall:
      return fmt::format("alltoall of rows of {} {} (splits {})", count, tutti::to_string(type),
                         fmt::join(splits, ","));
    case OpKind::kBarrier:
      return "barrier";
  }
  return "?";
}

std::string OpSpec::difference(const OpSpec& o) const {
  std::vector<std::string> parts;
  if (kind != o.kind)
    parts.push_back(fmt::format("collective {} vs {}", to_string(kind), to_string(o.kind)));
  if (type != o.type)
    parts.push_back(
        fmt::format("dtype {} vs {}", tutti::to_string(type), tutti::to_string(o.type)));
  if (count != o.count) {
    const bool per_row = kind == OpKind::kAllgather || kind == OpKind::kAlltoall;
    parts.push_back(fmt::format("{} {} vs {}", per_row ? "row size" : "count", count, o.count));
  }
  if (reduces(kind) && op != o.op)
    parts.push_back(fmt::format("op {} vs {}", tutti::to_string(op), tutti::to_string(o.op)));
  if (root != o.root) parts.push_back(fmt::format("root {} vs {}", root, o.root));
  if (prescale != o.prescale || postscale != o.postscale)
    parts.push_back(
        fmt::format("scales {}/{} vs {}/{}", prescale, postscale, o.prescale, o.postscale));
  if (kind == OpKind::kAlltoall && splits.size() != o.splits.size())
    parts.push_back(fmt::format("splits for {} vs {} ranks", splits.size(), o.splits.size()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void OpSpec::encode(net::wire::Writer& w) const {
  w.u8(static_cast<uint8_t>(kind));
  w.u8(static_cast<uint8_t>(type));
  w.u8(static_cast<uint8_t>(op));
  w.i32(root);
  w.u64(std::bit_cast<uint64_t>(prescale));
  w.u64(std::bit_cast<uint64_t>(postscale));
  w.u64(count);
  w.u64(rows);
  w.u32(static_cast<uint32_t>(splits.size()));
  for (uint64_t s : splits) w.u64(s);
}

OpSpec OpSpec::decode(net::wire::Reader& r, int size) {
  OpSpec s;
  const uint8_t kind = r.u8();
  const uint8_t type = r.u8();
  const uint8_t op = r.u8();
  if (kind >= kNumOpKinds || type >= kNumDataTypes || op >= kNumReduceOps)
    throw make_error(ErrorCode::kMismatch,
                     "malformed engine negotiation message (collective {}, dtype {}, op {}); are "
                     "all ranks running the same tutti version?",
                     kind, type, op);
  s.kind = static_cast<OpKind>(kind);
  s.type = static_cast<DataType>(type);
  s.op = static_cast<ReduceOp>(op);
  s.root = r.i32();
  s.prescale = std::bit_cast<double>(r.u64());
  s.postscale = std::bit_cast<double>(r.u64());
  s.count = r.u64();
  s.rows = r.u64();
  const uint32_t n = r.u32();
  if (n > static_cast<uint32_t>(size))
    throw make_error(ErrorCode::kMismatch,
                     "malformed engine negotiation message: {} alltoall splits for {} ranks", n,
                     size);
  s.splits.resize(n);
  for (auto& v : s.splits) v = r.u64();
  return s;
}

}  // namespace tutti::engine
