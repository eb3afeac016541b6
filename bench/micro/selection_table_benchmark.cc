// What a communicator pays once, at its first allreduce with TUTTI_ALGO=auto: the crossover table
// of select.cc (the modeled best algorithm at 16 sizes per power of two up to 1 TiB, each
// crossover bisected exactly). Afterwards a call looks its size up in the table.
#include <benchmark/benchmark.h>

#include "collectives/cost_model.hpp"
#include "collectives/selection_cache.hpp"

namespace {

using tutti::collectives::CostModel;
using tutti::collectives::Link;
using tutti::collectives::Placement;

void BM_TableOneHost(benchmark::State& state) {
  const CostModel model = CostModel::defaults();
  Placement p;
  p.ranks = 8;
  p.max_local = 8;
  p.window = true;
  for (auto _ : state) benchmark::DoNotOptimize(tutti::collectives::selection_table(model, p));
}
BENCHMARK(BM_TableOneHost)->Unit(benchmark::kMicrosecond);

void BM_TableFourHosts(benchmark::State& state) {
  const CostModel model = CostModel::defaults();
  Placement p;
  p.ranks = 16;
  p.hosts = 4;
  p.max_local = 4;
  p.flat = Link::kTcp;
  p.local = Link::kShm;
  for (auto _ : state) benchmark::DoNotOptimize(tutti::collectives::selection_table(model, p));
}
BENCHMARK(BM_TableFourHosts)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
