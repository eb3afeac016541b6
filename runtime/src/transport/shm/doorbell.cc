#include "transport/shm/doorbell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <vector>

namespace tutti::transport {
namespace {

// futex_waitv takes at most this many words; a wait on more rings sleeps on the first ones and
// relies on its timeout for the rest.
constexpr size_t kMaxBells = FUTEX_WAITV_MAX;

std::atomic<bool> no_waitv{false};

}  // namespace

void lower_doorbells(std::span<const Doorbell> bells) {
  for (const Doorbell& b : bells)
    std::atomic_ref<uint32_t>(*b.sleepers).fetch_sub(1, std::memory_order_relaxed);
}

bool sleep_on_doorbells(std::span<const Doorbell> bells, long timeout_ns) {
#ifdef SYS_futex_waitv
  if (!no_waitv.load(std::memory_order_relaxed)) {
    const size_t n = std::min(bells.size(), kMaxBells);
    futex_waitv waiters[kMaxBells];
    for (size_t i = 0; i < n; ++i) {
      // Shared, not private: the word lives in a segment another process writes.
      waiters[i] =
          futex_waitv{bells[i].seen, reinterpret_cast<uintptr_t>(bells[i].word), FUTEX_32, 0};
    }
    timespec until{};
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += timeout_ns % 1'000'000'000;
    until.tv_sec += timeout_ns / 1'000'000'000 + until.tv_nsec / 1'000'000'000;
    until.tv_nsec %= 1'000'000'000;
    const long r =
        syscall(SYS_futex_waitv, waiters, static_cast<unsigned>(n), 0u, &until, CLOCK_MONOTONIC);
    const int err = r < 0 ? errno : 0;
    lower_doorbells(bells);
    // Woken, a word had moved already (EAGAIN), timed out or interrupted: the caller looks again.
    if (r >= 0 || err == EAGAIN || err == ETIMEDOUT || err == EINTR) return true;
    // ENOSYS before Linux 5.16; EPERM where a seccomp profile predates the call (a container
    // runtime's default may). Every later wait yields instead of sleeping.
    no_waitv.store(true, std::memory_order_relaxed);
    return false;
  }
#endif
  lower_doorbells(bells);
  return false;
}

void ring_doorbell(uint32_t* word) {
  syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace tutti::transport
