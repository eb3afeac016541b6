#include "transport/local_window.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "core/cpu_relax.hpp"
#include "core/error.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {
namespace {

using Clock = std::chrono::steady_clock;

// Each counter on its own pair of cache lines: a rank storing one counter must not evict the line
// another rank polls, and 128 bytes also keeps the adjacent-line prefetcher from pairing them.
constexpr size_t kFlagStride = 128;
static_assert(sizeof(uint64_t) + 2 * (LocalWindow::kInlineBytes + sizeof(uint64_t)) <= 64,
              "a counter's inline banks must share its cache line");
static_assert(CallSignature::kWireBytes == 3 * sizeof(uint64_t),
              "a call fills one bank of the call line");
constexpr size_t kPage = 4096;
// Spin rounds a decayed budget still tries, and what a success adds back.
constexpr int kSpinRegrowth = 8;
// Yield rounds between looks at the clock (a clock read costs about as much as a yield).
constexpr uint64_t kClockEvery = 16;
// How often the channels (abort notices) and the awaited ranks' pidfds are looked at.
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(1);
// After this long without the flags moving, nap instead of yielding.
constexpr auto kYieldPhase = std::chrono::seconds(1);
constexpr long kMinNapNs = 100'000;
constexpr long kMaxNapNs = 1'000'000;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

size_t flags_bytes(int size) {
  return round_up(static_cast<size_t>(size) * (LocalWindow::kFlags + 1) * kFlagStride, kPage);
}

}  // namespace

size_t LocalWindow::footprint(int size, size_t area_bytes) {
  return flags_bytes(size) + static_cast<size_t>(size) * round_up(area_bytes, kPage);
}

LocalWindow::LocalWindow(Transport& transport, std::byte* memory, size_t area_bytes,
                         std::shared_ptr<void> mapping, int spin_rounds)
    : transport_(transport),
      rank_(transport.rank()),
      size_(transport.size()),
      flags_(memory),
      areas_(memory + flags_bytes(transport.size())),
      area_bytes_(area_bytes),
      area_stride_(round_up(area_bytes, kPage)),
      mapping_(std::move(mapping)),
      spin_rounds_(std::max(0, spin_rounds)),
      spin_budget_(spin_rounds_) {}

uint64_t& LocalWindow::flag_word(int rank, int index) const {
  return *reinterpret_cast<uint64_t*>(
      flags_ + (static_cast<size_t>(rank) * kLines + static_cast<size_t>(index)) * kFlagStride);
}

std::atomic_ref<uint64_t> LocalWindow::call_word(int rank, int bank, int i) const {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(
      reinterpret_cast<std::byte*>(&flag_word(rank, kCallLine)) + static_cast<size_t>(bank) * 24 +
      static_cast<size_t>(i) * sizeof(uint64_t)));
}

// Each call goes to bank sequence % 2, so a reader of call N is not disturbed by call N + 1, and
// word 0 (the sequence) works as a seqlock: zeroed before the other words change, set after. All
// accesses are sequentially consistent (no separate fences, which TSan cannot check): both sides
// are slow paths. A re-post of the same call only adds its algorithm, so a reader that mixes the
// two posts still reads that call.
void LocalWindow::announce(const CallSignature& call) {
  const CallSignature::Wire wire = call.encode();
  uint64_t words[3];
  std::memcpy(words, wire.data(), sizeof(words));
  const int bank = static_cast<int>(call.sequence % 2);
  call_word(rank_, bank, 0).store(0);
  call_word(rank_, bank, 1).store(words[1]);
  call_word(rank_, bank, 2).store(words[2]);
  call_word(rank_, bank, 0).store(words[0]);
}

int LocalWindow::find_disagreement(const CallSignature& mine, CallSignature& theirs) const {
  const int bank = static_cast<int>(mine.sequence % 2);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    uint64_t words[3];
    words[0] = call_word(r, bank, 0).load();
    if (words[0] != mine.sequence) continue;
    words[1] = call_word(r, bank, 1).load();
    words[2] = call_word(r, bank, 2).load();
    if (call_word(r, bank, 0).load() != words[0]) continue;  // rewritten meanwhile
    CallSignature::Wire wire;
    std::memcpy(wire.data(), words, sizeof(words));
    theirs = CallSignature::decode(wire.data());
    if (theirs.conflicts(mine)) return r;
  }
  return -1;
}

void LocalWindow::poison() {
  for (int index = 0; index < kFlags; ++index)
    std::atomic_ref<uint64_t>(flag_word(rank_, index)).store(kPoisoned, std::memory_order_seq_cst);
}

bool LocalWindow::all_reached(int index, uint64_t value) {
  uint64_t lowest = std::numeric_limits<uint64_t>::max();
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    uint64_t v = std::atomic_ref<uint64_t>(flag_word(r, index)).load(std::memory_order_acquire);
    // Signed: a poisoned counter (a rank that failed) never counts as reached.
    if (static_cast<int64_t>(v) < static_cast<int64_t>(value)) return false;
    lowest = std::min(lowest, v);
  }
  known_[index] = lowest;
  return true;
}

void LocalWindow::wait_slow(int index, uint64_t value, Deadline deadline, std::string_view what) {
  // A few rounds even on an exhausted budget, so it can tell when spinning pays again.
  const int spins = spin_rounds_ > 0 ? std::max(spin_budget_, kSpinRegrowth) : 0;
  for (int spin = 0; spin < spins; ++spin) {
    cpu_relax();
    if (all_reached(index, value)) {
      spin_budget_ = std::min(spin_rounds_, spin_budget_ * 2 + kSpinRegrowth);
      return;
    }
  }
  spin_budget_ /= 2;

  // Not before: a clock read costs as much as the whole wait when spinning ends it.
  const auto start = Clock::now();
  auto next_check = start + kPeerCheckInterval;
  long nap_ns = kMinNapNs;
  auto collect_pending = [&] {
    pending_.clear();
    for (int r = 0; r < size_; ++r)
      if (r != rank_ &&
          static_cast<int64_t>(
              std::atomic_ref<uint64_t>(flag_word(r, index)).load(std::memory_order_acquire)) <
              static_cast<int64_t>(value))
        pending_.push_back(r);
  };
  bool napping = false;
  for (uint64_t round = 1;; ++round) {
    if (all_reached(index, value)) return;
    if (!napping && round % kClockEvery != 0) {
      sched_yield();
      continue;
    }
    const auto now = Clock::now();
    if (now >= next_check) {
      next_check = now + kPeerCheckInterval;
      collect_pending();
      transport_.check_peers(pending_, what);
    }
    if (deadline.expired()) {
      collect_pending();
      if (pending_.empty()) return;
      transport_.throw_window_timeout(what, pending_,
                                      std::chrono::duration<double>(now - start).count());
    }
    if (napping || now - start >= kYieldPhase) {
      napping = true;
      transport_.nap(std::min<long>(nap_ns, deadline.remaining().count()));
      nap_ns = std::min(nap_ns * 2, kMaxNapNs);
      continue;
    }
    sched_yield();
  }
}

}  // namespace tutti::transport
