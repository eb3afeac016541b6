// Plain ncclAllReduce as tutti-bench's baseline for --device cuda: the same ranks, the same GPU
// buffers, interleaved with tutti's allreduce. Defined only when built with CUDA
// (TUTTI_BENCH_HAVE_CUDA); baseline.cc never calls it otherwise.
#pragma once

#include <memory>

#include "baseline.hpp"

#ifndef TUTTI_BENCH_HAVE_CUDA
#define TUTTI_BENCH_HAVE_CUDA 0
#endif

namespace tutti::bench {

// Nothing happens before tutti::init(); connect() makes one NCCL communicator over the world's
// ranks on the calling thread's current GPU (the unique id goes through tutti's broadcast).
std::unique_ptr<BaselineSession> start_nccl_session();

}  // namespace tutti::bench
