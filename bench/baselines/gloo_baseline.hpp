// Gloo's ring_chunked allreduce over its tcp transport as tutti-bench's baseline. Defined only when
// built with Gloo (TUTTI_BENCH_HAVE_GLOO); baseline.cc never calls it otherwise.
#pragma once

#include <memory>

#include "baseline.hpp"

#ifndef TUTTI_BENCH_HAVE_GLOO
#define TUTTI_BENCH_HAVE_GLOO 0
#endif

namespace tutti::bench {

// Nothing happens before tutti::init(); connect() rendezvouses through a Gloo FileStore in a
// temporary directory that rank 0 creates and names to the others with a tutti broadcast.
std::unique_ptr<BaselineSession> start_gloo_session();

}  // namespace tutti::bench
