// Doorbells: sleeping on shared-memory ring counters until a peer moves them. A rank whose host has
// fewer CPUs than ranks and that waits on rings only yields in a loop otherwise: every yield is a
// context switch that takes the CPU from the rank it waits for. A sleeper marks the counters it
// waits on (their ring's sleeper count), then sleeps on their low 32-bit words (futex_waitv); the
// peer that moves a marked counter wakes it.
#pragma once

#include <cstdint>
#include <span>

namespace tutti::transport {

// One counter a sleeper waits on: the futex word (a 64-bit counter's low half), the value it had
// when the sleeper last looked, and the ring's count of sleepers on that side, which the sleeper
// raised (the mover wakes the word while it is not zero).
struct Doorbell {
  uint32_t* word = nullptr;
  uint32_t seen = 0;
  uint32_t* sleepers = nullptr;
};

// What a stream or channel says when asked for its doorbells.
enum class Bells { kNone, kArmed, kReady };

// Lowers the sleeper counts `bells` raised, for a wait that does not sleep after all.
void lower_doorbells(std::span<const Doorbell> bells);

// Sleeps until one of `bells` moves from what was seen, or `timeout_ns` passes; then lowers every
// bell's sleeper count. False where futex_waitv is missing (before Linux 5.16) or refused (a
// seccomp profile that predates it): the caller yields instead, now and in every later wait (the
// counts are lowered all the same).
bool sleep_on_doorbells(std::span<const Doorbell> bells, long timeout_ns);

// Wakes every thread sleeping on `word` (another process's, through shared memory).
void ring_doorbell(uint32_t* word);

}  // namespace tutti::transport
