// What a collective call is, as every rank must agree on it: which call of the communicator
// (sequence), which collective, element count, type, reduce op and root. The transport stamps it on
// every message of the call and posts it in the shared-memory window, so a rank whose call differs
// from a peer's fails with Error(kMismatch) naming both calls instead of computing a wrong answer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tutti/error.hpp"

namespace tutti::transport {

enum class CallKind : uint8_t {
  kNone = 0,  // no call stamped (a transport driven directly, as in unit tests): nothing is checked
  kAllreduce = 1,
  kBroadcast = 2,
  kAllgather = 3,
  kReduceScatter = 4,
  kBarrier = 5,
  kReduce = 6,
  kGather = 7,  // gather and gatherv: count is the sum of the counts
  kScatter = 8,
  kAllgatherv = 9,  // count: the sum of the counts; root: a digest of the counts (counts_digest)
  kReduceScatterv = 10,
  kAlltoall = 11,   // count: elements per rank
  kAlltoallv = 12,  // count: 0 (ranks' totals differ); every block's size is checked on arrival
};

// The collective's name ("allreduce", "reduce_scatter"): the one table of them, which the
// mismatch messages, the hang report and the engine read.
std::string_view kind_name(CallKind kind);

// A 31-bit digest of per-rank counts, which every rank passes alike: ring-based v-collectives skip
// empty blocks, so counts that differ could otherwise go unseen.
int32_t counts_digest(const uint64_t* counts, size_t n);
// Whether `kind` keeps counts_digest in the root field.
constexpr bool root_is_counts_digest(CallKind kind) {
  return kind == CallKind::kAllgatherv || kind == CallKind::kReduceScatterv;
}

struct CallSignature {
  static constexpr int kNoValue = -1;  // dtype, op or root a collective does not have

  uint64_t sequence = 0;
  CallKind kind = CallKind::kNone;
  int8_t dtype = kNoValue;
  int8_t op = kNoValue;
  int32_t root = kNoValue;
  uint64_t count = 0;
  // The allreduce algorithm chosen for the call (the collectives' own numbering, 0: none yet).
  // Ranks that picked different algorithms (a per-rank TUTTI_ALGO or tuning file) would read each
  // other's messages as the wrong steps.
  uint8_t algorithm = 0;
  // A call on device buffers (collectives/device): kDeviceAlgorithmBase + its configured
  // DeviceAllreduce path for allreduce, kDeviceCall for the other collectives.
  static constexpr uint8_t kDeviceAlgorithmBase = 16;
  static constexpr uint8_t kDeviceCall = 31;

  bool operator==(const CallSignature&) const = default;
  bool stamped() const { return kind != CallKind::kNone; }
  // Whether two ranks' calls cannot both be right: any field differs, the algorithm only where
  // both have chosen one.
  bool conflicts(const CallSignature& other) const;

  // On the wire and in the window: 24 bytes, sequence first.
  static constexpr size_t kWireBytes = 24;
  using Wire = std::array<std::byte, kWireBytes>;
  Wire encode() const;
  static CallSignature decode(const std::byte* wire);

  // One word that differs whenever two signatures differ (the shared-memory fast path compares it).
  uint64_t fingerprint() const;

  // "allreduce #12 (1000 x float32, sum)", "broadcast #3 (10 x int64, root 2)", "barrier #7".
  std::string describe() const;
};

// The kMismatch error for this rank (`rank`, calling `mine`) finding that `peer` called `theirs`.
Error call_mismatch(int rank, const CallSignature& mine, int peer, const CallSignature& theirs);

}  // namespace tutti::transport
