// The pause a busy-wait takes between looks at shared memory: it tells the core (and a hyper-thread
// sibling, which may be the peer being waited for) that this loop spins, and saves the pipeline
// flush a spin loop's exit otherwise costs.
#pragma once

namespace tutti {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace tutti
