// Lets the element loops use 32-byte AVX2 vectors without requiring -mavx2: g++ compiles a
// function marked TUTTI_REDUCE_SIMD_CLONES twice (AVX2 and baseline x86-64) and picks one per
// process at load time (ifunc), so one binary runs everywhere and is fast where the CPU allows.
// The choice is made per call of a whole loop, never per element.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__) && \
    !defined(TUTTI_REDUCE_NO_SIMD_CLONES)
#define TUTTI_REDUCE_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TUTTI_REDUCE_SIMD_CLONES
#endif
