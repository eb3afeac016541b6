// What the hang report adds to every collective call: CallProgress::enter and leave (one clock read
// and a few relaxed stores), against the 0.1 us a call may spend on observability. Compared
// in docs/OBSERVABILITY.md with the 8 B shared-memory allreduce it rides on.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "comm/call_progress.hpp"

namespace {

void BM_EnterLeave(benchmark::State& state) {
  tutti::comm::CallProgress progress;
  tutti::transport::CallSignature call;
  call.kind = tutti::transport::CallKind::kAllreduce;
  call.count = 2;
  call.dtype = 7;
  call.op = 0;
  for (auto _ : state) {
    ++call.sequence;
    progress.enter(call);
    progress.leave(call.sequence);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_EnterLeave);

// The watch's side, once per period per communicator: never on a call's path.
void BM_Snapshot(benchmark::State& state) {
  tutti::comm::CallProgress progress;
  for (auto _ : state) benchmark::DoNotOptimize(progress.snapshot());
}
BENCHMARK(BM_Snapshot);

}  // namespace

BENCHMARK_MAIN();
