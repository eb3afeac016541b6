#include "transport/call_signature.hpp"

#include <cstring>
#include <iterator>

#include "core/error.hpp"
#include "tutti/types.hpp"

namespace tutti::transport {

// The one table of collective names: the mismatch messages', the stall report's and the engine's.
std::string_view kind_name(CallKind kind) {
  switch (kind) {
    case CallKind::kNone:
      return "no collective";
    case CallKind::kAllreduce:
      return "allreduce";
    case CallKind::kBroadcast:
      return "broadcast";
    case CallKind::kAllgather:
      return "allgather";
    case CallKind::kReduceScatter:
      return "reduce_scatter";
    case CallKind::kBarrier:
      return "barrier";
    case CallKind::kReduce:
      return "reduce";
    case CallKind::kGather:
      return "gather";
    case CallKind::kScatter:
      return "scatter";
    case CallKind::kAllgatherv:
      return "allgatherv";
    case CallKind::kReduceScatterv:
      return "reduce_scatterv";
    case CallKind::kAlltoall:
      return "alltoall";
    case CallKind::kAlltoallv:
      return "alltoallv";
  }
  return "an unknown collective";
}

namespace {

// The allreduce registry's names by tutti::Algorithm's numbering (collectives sit above this layer;
// AllreduceRegistry.OneEntryPerAlgorithmInTheEnumsOrder checks that the two agree).
std::string algorithm_name(int algorithm) {
  static constexpr std::string_view kNames[] = {"none", "ring", "tree", "hd", "shm", "hier"};
  static constexpr std::string_view kDeviceNames[] = {"device auto", "device nccl", "device ring",
                                                      "device hier"};
  if (algorithm >= 0 && algorithm < static_cast<int>(std::size(kNames)))
    return std::string(kNames[algorithm]);
  const int device = algorithm - CallSignature::kDeviceAlgorithmBase;
  if (device >= 0 && device < static_cast<int>(std::size(kDeviceNames)))
    return std::string(kDeviceNames[device]);
  if (algorithm == CallSignature::kDeviceCall) return "device";
  return fmt::format("algorithm {}", algorithm);
}

std::string dtype_name(int dtype) {
  if (dtype >= 0 && dtype < kNumDataTypes)
    return std::string(to_string(static_cast<DataType>(dtype)));
  return fmt::format("dtype {}", dtype);
}

std::string op_name(int op) {
  if (op >= 0 && op < kNumReduceOps) return std::string(to_string(static_cast<ReduceOp>(op)));
  return fmt::format("op {}", op);
}

// The fields that differ, for the message: "count 1000 on rank 0 vs 10 on rank 1, op ...".
std::string differences(int rank, const CallSignature& mine, int peer,
                        const CallSignature& theirs) {
  std::string out;
  auto add = [&](std::string_view what, const std::string& a, const std::string& b) {
    if (a == b) return;
    out += fmt::format("{}{} {} on rank {} vs {} on rank {}", out.empty() ? "" : ", ", what, a,
                       rank, b, peer);
  };
  add("call number", fmt::format("#{}", mine.sequence), fmt::format("#{}", theirs.sequence));
  // Another collective: its count, type and the rest mean other things, so that is all to say.
  if (mine.kind != theirs.kind) {
    add("collective", std::string(kind_name(mine.kind)), std::string(kind_name(theirs.kind)));
    return out;
  }
  add("count", std::to_string(mine.count), std::to_string(theirs.count));
  add("dtype", dtype_name(mine.dtype), dtype_name(theirs.dtype));
  add("op", op_name(mine.op), op_name(theirs.op));
  if (root_is_counts_digest(mine.kind)) {
    if (mine.root != theirs.root) add("per-rank counts", "one list", "another");
  } else {
    add("root", std::to_string(mine.root), std::to_string(theirs.root));
  }
  if (mine.algorithm != 0 && theirs.algorithm != 0)
    add("allreduce algorithm", algorithm_name(mine.algorithm), algorithm_name(theirs.algorithm));
  if (mine.algorithm != 0 && theirs.algorithm != 0 && mine.algorithm != theirs.algorithm)
    out += "; give every rank the same TUTTI_ALGO and TUTTI_TUNE_FILE";
  return out;
}

}  // namespace

int32_t counts_digest(const uint64_t* counts, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the counts' bytes
  for (size_t i = 0; i < n; ++i) {
    for (int b = 0; b < 8; ++b) {
      h ^= (counts[i] >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  return static_cast<int32_t>(h >> 33);
}

bool CallSignature::conflicts(const CallSignature& other) const {
  CallSignature a = *this, b = other;
  if (a.algorithm == 0 || b.algorithm == 0) a.algorithm = b.algorithm = 0;
  return !(a == b);
}

CallSignature::Wire CallSignature::encode() const {
  Wire out{};
  std::memcpy(out.data(), &sequence, 8);
  out[8] = static_cast<std::byte>(kind);
  out[9] = static_cast<std::byte>(dtype);
  out[10] = static_cast<std::byte>(op);
  out[11] = static_cast<std::byte>(algorithm);
  std::memcpy(out.data() + 12, &root, 4);
  std::memcpy(out.data() + 16, &count, 8);
  return out;
}

CallSignature CallSignature::decode(const std::byte* wire) {
  CallSignature s;
  std::memcpy(&s.sequence, wire, 8);
  s.kind = static_cast<CallKind>(wire[8]);
  s.dtype = static_cast<int8_t>(wire[9]);
  s.op = static_cast<int8_t>(wire[10]);
  s.algorithm = static_cast<uint8_t>(wire[11]);
  std::memcpy(&s.root, wire + 12, 4);
  std::memcpy(&s.count, wire + 16, 8);
  return s;
}

uint64_t CallSignature::fingerprint() const {
  // The small fields fill one word; three independent odd multipliers (bijections) make any change
  // of one field change the result, and two fields changing together collide with probability
  // ~2^-64. Independent products keep it a few cycles on the 8-byte allreduce's path.
  const uint64_t small = uint64_t{static_cast<uint8_t>(kind)} |
                         uint64_t{static_cast<uint8_t>(dtype)} << 8 |
                         uint64_t{static_cast<uint8_t>(op)} << 16 | uint64_t{algorithm} << 24 |
                         uint64_t{static_cast<uint32_t>(root)} << 32;
  const uint64_t h = sequence * 0x9e3779b97f4a7c15ull ^ count * 0xc2b2ae3d27d4eb4full ^
                     (small + 1) * 0xff51afd7ed558ccdull;
  return h | 1;  // never 0, the value of a window word nobody has written
}

std::string CallSignature::describe() const {
  std::string details;
  switch (kind) {
    case CallKind::kAllreduce:
      details = algorithm == 0
                    ? fmt::format(" ({} x {}, {})", count, dtype_name(dtype), op_name(op))
                    : fmt::format(" ({} x {}, {}, {})", count, dtype_name(dtype), op_name(op),
                                  algorithm_name(algorithm));
      break;
    case CallKind::kReduceScatter:
      details = fmt::format(" ({} x {}, {})", count, dtype_name(dtype), op_name(op));
      break;
    case CallKind::kBroadcast:
      details = fmt::format(" ({} x {}, root {})", count, dtype_name(dtype), root);
      break;
    case CallKind::kAllgather:
    case CallKind::kAllgatherv:
      details = fmt::format(" ({} x {})", count, dtype_name(dtype));
      break;
    case CallKind::kReduce:
      details = fmt::format(" ({} x {}, {}, root {})", count, dtype_name(dtype), op_name(op), root);
      break;
    case CallKind::kGather:
    case CallKind::kScatter:
      details = fmt::format(" ({} x {} in all, root {})", count, dtype_name(dtype), root);
      break;
    case CallKind::kReduceScatterv:
      details = fmt::format(" ({} x {} in all, {})", count, dtype_name(dtype), op_name(op));
      break;
    case CallKind::kAlltoall:
      details = fmt::format(" ({} x {} per rank)", count, dtype_name(dtype));
      break;
    case CallKind::kAlltoallv:
      details = fmt::format(" ({})", dtype_name(dtype));
      break;
    default:
      break;
  }
  return fmt::format("{} #{}{}", kind_name(kind), sequence, details);
}

Error call_mismatch(int rank, const CallSignature& mine, int peer, const CallSignature& theirs) {
  return make_error(
      ErrorCode::kMismatch,
      "collective mismatch: rank {} called {} but rank {} called {} ({}). Every rank must make "
      "the same collective calls in the same order with the same count, dtype, op and root",
      peer, theirs.describe(), rank, mine.describe(), differences(rank, mine, peer, theirs));
}

}  // namespace tutti::transport
