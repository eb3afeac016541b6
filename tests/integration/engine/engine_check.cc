// engine_check: the engine (asynchronous named collectives) on real rank processes under tuttirun.
// The first argument picks the scenario; every result is checked exactly. Prints "ok:" lines and
// exits 0, or "FAIL:" lines and exits 1.
//
//   random [--tensors N] [--steps S] [--threads K]   mixed collectives, random sizes and dtypes,
//                                       a different order on every rank, from K threads
//   mismatch                            one rank gives a name another size
//   stall                               the last rank never submits one name
//   kill --pid-dir D                    loops until a rank is killed (runtime/kill_rank.sh)
//   join                                rank r has r+1 batches, then joins
//   sets                                two overlapping process sets from two threads
//   timeline --path P                   timeline started and stopped at run time
//   fusion                              tensors that become ready together run as one collective
//   replay [--tensors N] [--expect-replays] [--cut]
//                                       a loop of the same names replays the engine's plan; steps
//                                       that differ on one rank or on all fall back, exact results;
//                                       --cut: steps whose burst pauses 12 ms halfway replay too
//   misuse                              every mistake refused clearly; the engine goes on
//   abort                               abort() on a process set fails its engine's handles
//   pacing                              every rank waits for a name nobody else has: paced cycles
//   standby                             waited bursts put the engine thread in standby; a polled
//                                       burst and callbacks still run
//
// --unbounded-waits (any scenario): every handle is waited for without a timeout, so the waiting
// thread runs the engine's cycles itself (Engine::run_cycles_until) instead of sleeping while the
// engine thread runs them; the scenario's own limits then come from ctest's TIMEOUT.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "integration/support/check_report.hpp"
#include "tutti/tutti.hpp"

namespace {

using tutti::DataType;
using tutti::ReduceOp;
using Clock = std::chrono::steady_clock;
using tutti::testing::fail;
using tutti::testing::g_failures;
using tutti::testing::g_rank;
using tutti::testing::ok;

int g_size = 0;
bool g_unbounded_waits = false;

// Handle::wait, with this scenario's limit or (--unbounded-waits) none.
void await(const tutti::Handle& h, int limit_seconds) {
  if (g_unbounded_waits)
    h.wait();
  else
    h.wait(std::chrono::seconds(limit_seconds));
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Small integers (0..16) so that sums over 8 ranks are exact in every dtype used here.
int value(int rank, int tensor, size_t j) {
  return static_cast<int>(
      ((static_cast<size_t>(rank) + 1) * ((j * 7 + static_cast<size_t>(tensor)) % 5) +
       static_cast<size_t>(rank)) %
      17);
}

const DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                           DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                           DataType::kUInt8};

// Writes and reads small non-negative integers in any of kTypes.
void put(std::vector<std::byte>& buf, DataType t, size_t j, int v) {
  std::byte* p = buf.data() + j * tutti::element_size(t);
  switch (t) {
    case DataType::kFloat32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DataType::kFloat64: {
      double d = v;
      std::memcpy(p, &d, 8);
      return;
    }
    case DataType::kBFloat16: {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t h = static_cast<uint16_t>(bits >> 16);
      std::memcpy(p, &h, 2);
      return;
    }
    case DataType::kFloat16: {
      uint16_t h = 0;
      if (v > 0) {
        int e = 31 - __builtin_clz(static_cast<unsigned>(v));
        h = static_cast<uint16_t>(((e + 15) << 10) |
                                  ((static_cast<unsigned>(v) << (10 - e)) & 0x3FF));
      }
      std::memcpy(p, &h, 2);
      return;
    }
    case DataType::kInt32: {
      int32_t x = v;
      std::memcpy(p, &x, 4);
      return;
    }
    case DataType::kInt64: {
      int64_t x = v;
      std::memcpy(p, &x, 8);
      return;
    }
    default: {
      uint8_t x = static_cast<uint8_t>(v);
      std::memcpy(p, &x, 1);
      return;
    }
  }
}

double get(const std::byte* base, DataType t, size_t j) {
  const std::byte* p = base + j * tutti::element_size(t);
  switch (t) {
    case DataType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case DataType::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      uint32_t bits = uint32_t{h} << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DataType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      if (h == 0) return 0;
      int e = ((h >> 10) & 0x1F) - 15;
      return std::ldexp(1.0 + (h & 0x3FF) / 1024.0, e);
    }
    case DataType::kInt32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DataType::kInt64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    default:
      return static_cast<double>(static_cast<uint8_t>(*p));
  }
}

// One tensor of the random scenario: the same spec on every rank (drawn from its index), its own
// data per rank.
struct Tensor {
  enum Kind { kAllreduce, kAllgather, kBroadcast, kReduceScatter, kAlltoall } kind = kAllreduce;
  std::string name;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;
  int root = 0;
  std::vector<std::byte> send, recv;
  std::vector<size_t> splits;
  tutti::Handle handle;
};

size_t rows_of(int rank, int i) {
  return static_cast<size_t>((rank + i) % 3);
}
size_t split_of(int from, int to, int i) {
  return static_cast<size_t>((from + to + i) % 3);
}

Tensor make_tensor(int i, int step) {
  std::mt19937 rng(static_cast<unsigned>(i) * 7919u + 13u);  // the same on every rank
  Tensor t;
  t.name = fmt::format("grad.{}", i);
  const int kind = static_cast<int>(rng() % 20);
  t.kind = kind < 14   ? Tensor::kAllreduce
           : kind < 16 ? Tensor::kAllgather
           : kind < 17 ? Tensor::kBroadcast
           : kind < 18 ? Tensor::kReduceScatter
                       : Tensor::kAlltoall;
  t.type = kTypes[rng() % std::size(kTypes)];
  t.op = rng() % 3 == 0 ? ReduceOp::kMax : ReduceOp::kSum;
  const size_t counts[] = {0, 1, 7, 100, 1000, 4099, 70001};
  t.count = counts[rng() % std::size(counts)];
  if (t.kind != Tensor::kAllreduce && t.count > 4099) t.count = 1000;
  t.root = static_cast<int>(rng() % static_cast<unsigned>(g_size));
  const int seed = i + 1000 * step;
  const size_t el = tutti::element_size(t.type);
  size_t send_elems = t.count;
  if (t.kind == Tensor::kAllgather) send_elems = rows_of(g_rank, i) * t.count;
  if (t.kind == Tensor::kReduceScatter) send_elems = t.count * static_cast<size_t>(g_size);
  if (t.kind == Tensor::kAlltoall) {
    send_elems = 0;
    for (int p = 0; p < g_size; ++p) {
      t.splits.push_back(split_of(g_rank, p, i));
      send_elems += t.splits.back() * t.count;
    }
  }
  t.send.resize(send_elems * el);
  for (size_t j = 0; j < send_elems; ++j) put(t.send, t.type, j, value(g_rank, seed, j));
  if (t.kind == Tensor::kAllreduce || t.kind == Tensor::kReduceScatter)
    t.recv.assign(t.count * el, std::byte{0xAB});
  if (t.kind == Tensor::kBroadcast) t.recv = t.send;
  return t;
}

void submit(const tutti::Communicator& c, Tensor& t) {
  switch (t.kind) {
    case Tensor::kAllreduce:
      t.handle = c.allreduce_async(t.name, t.send.data(), t.recv.data(), t.count, t.type, t.op);
      return;
    case Tensor::kAllgather:
      t.handle = c.allgather_async(
          t.name, t.send.data(),
          t.send.size() / tutti::element_size(t.type) / std::max<size_t>(t.count, 1), t.count,
          t.type);
      return;
    case Tensor::kBroadcast:
      t.handle = c.broadcast_async(t.name, t.recv.data(), t.count, t.type, t.root);
      return;
    case Tensor::kReduceScatter:
      t.handle =
          c.reduce_scatter_async(t.name, t.send.data(), t.recv.data(), t.count, t.type, t.op);
      return;
    case Tensor::kAlltoall:
      t.handle = c.alltoall_async(t.name, t.send.data(), t.splits, t.count, t.type);
      return;
  }
}

// Checks t's result on this rank; `step` picks the data every rank sent.
void check(const Tensor& t, int i, int step) {
  const int seed = i + 1000 * step;
  const auto reduced = [&](size_t j) {
    double acc = t.op == ReduceOp::kMax ? -1 : 0;
    for (int r = 0; r < g_size; ++r) {
      double v = value(r, seed, j);
      acc = t.op == ReduceOp::kMax ? std::max(acc, v) : acc + v;
    }
    return acc;
  };
  std::string where;
  const auto expect = [&](const std::byte* data, size_t j, double want, size_t at) {
    double got = get(data, t.type, at);
    if (got != want && where.empty())
      where = fmt::format("element {}: {} instead of {}", at, got, want);
    (void)j;
  };
  switch (t.kind) {
    case Tensor::kAllreduce:
      for (size_t j = 0; j < t.count; ++j) expect(t.recv.data(), j, reduced(j), j);
      break;
    case Tensor::kReduceScatter:
      for (size_t j = 0; j < t.count; ++j)
        expect(t.recv.data(), j, reduced(static_cast<size_t>(g_rank) * t.count + j), j);
      break;
    case Tensor::kBroadcast:
      for (size_t j = 0; j < t.count; ++j) expect(t.recv.data(), j, value(t.root, seed, j), j);
      break;
    case Tensor::kAllgather: {
      auto out = t.handle.output();
      size_t at = 0;
      for (int r = 0; r < g_size; ++r)
        for (size_t j = 0; j < rows_of(r, i) * t.count; ++j)
          expect(out.data(), j, value(r, seed, j), at++);
      if (at * tutti::element_size(t.type) != out.size())
        where = fmt::format("{} bytes instead of {}", out.size(), at * tutti::element_size(t.type));
      break;
    }
    case Tensor::kAlltoall: {
      auto out = t.handle.output();
      size_t at = 0;
      for (int r = 0; r < g_size; ++r) {
        size_t offset = 0;  // where r's block for this rank starts in r's send buffer
        for (int p = 0; p < g_rank; ++p) offset += split_of(r, p, i) * t.count;
        for (size_t j = 0; j < split_of(r, g_rank, i) * t.count; ++j)
          expect(out.data(), j, value(r, seed, offset + j), at++);
      }
      break;
    }
  }
  if (!where.empty())
    fail(fmt::format("{} ({}, {} of {}): {}", t.name, static_cast<int>(t.kind), t.count,
                     tutti::to_string(t.type), where));
}

int scenario_random(const tutti::Communicator& world, int tensors, int steps, int threads) {
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> all;
    for (int i = 0; i < tensors; ++i) all.push_back(make_tensor(i, step));
    // A different order on every rank (and every step), split over `threads` threads.
    std::vector<int> order(static_cast<size_t>(tensors));
    for (int i = 0; i < tensors; ++i) order[static_cast<size_t>(i)] = i;
    std::mt19937 rng(static_cast<unsigned>(g_rank * 31 + step));
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k)
      pool.emplace_back([&, k] {
        for (size_t n = static_cast<size_t>(k); n < order.size();
             n += static_cast<size_t>(threads)) {
          try {
            submit(world, all[static_cast<size_t>(order[n])]);
          } catch (const tutti::Error& e) {
            fail(fmt::format("submit: {}", e.what()));
          }
        }
      });
    for (auto& t : pool) t.join();
    for (int i = 0; i < tensors; ++i) {
      try {
        await(all[static_cast<size_t>(i)].handle, 120);
        check(all[static_cast<size_t>(i)], i, step);
      } catch (const tutti::Error& e) {
        fail(fmt::format("{}: {}", all[static_cast<size_t>(i)].name, e.what()));
      }
    }
  }
  const tutti::EngineStats s = world.engine_stats();
  std::printf(
      "rank %d: cycles %llu tensors %llu collectives %llu fused %llu cache_hits %llu "
      "announced %llu\n",
      g_rank, static_cast<unsigned long long>(s.cycles), static_cast<unsigned long long>(s.tensors),
      static_cast<unsigned long long>(s.collectives), static_cast<unsigned long long>(s.fused),
      static_cast<unsigned long long>(s.cache_hits), static_cast<unsigned long long>(s.announced));
  const uint64_t expected = static_cast<uint64_t>(tensors) * static_cast<uint64_t>(steps);
  if (s.tensors != expected)
    fail(fmt::format("{} tensors completed, {} expected", s.tensors, expected));
  const char* threshold = std::getenv("TUTTI_FUSION_THRESHOLD");
  const bool fusion = !(threshold && std::string(threshold) == "0");
  if (fusion && s.collectives >= s.tensors)
    fail(fmt::format("fusion did not fuse: {} collectives for {} tensors", s.collectives,
                     s.tensors));
  // Zero-element allreduce, broadcast and reduce_scatter complete without a collective.
  uint64_t empty = 0;
  for (int i = 0; i < tensors; ++i) {
    const Tensor t = make_tensor(i, 0);
    if (t.count == 0 && (t.kind == Tensor::kAllreduce || t.kind == Tensor::kBroadcast ||
                         t.kind == Tensor::kReduceScatter))
      empty += static_cast<uint64_t>(steps);
  }
  if (!fusion && (s.fused != 0 || s.collectives != s.tensors - empty))
    fail(fmt::format("fusion off, yet {} fused and {} collectives for {} tensors ({} empty)",
                     s.fused, s.collectives, s.tensors, empty));
  const char* cache = std::getenv("TUTTI_CACHE_CAPACITY");
  const bool cached = !(cache && std::string(cache) == "0");
  if (steps > 1 && cached && s.cache_hits == 0) fail("no cache hits over repeated steps");
  if (!cached && s.cache_hits != 0) fail("cache hits with the cache off");
  ok(fmt::format("random: {} tensors x {} steps on {} ranks from {} threads, {} collectives",
                 tensors, steps, g_size, threads, s.collectives));
  return 0;
}

// Readiness held back until released: tensors enqueued behind it become ready together (as GPU
// tensors do when one event covers a whole backward pass), so the engine sees them in one cycle.
class Gate : public tutti::ReadyEvent {
 public:
  bool ready() override { return open.load(); }
  std::atomic<bool> open{false};
};

int scenario_fusion(const tutti::Communicator& world) {
  const char* threshold = std::getenv("TUTTI_FUSION_THRESHOLD");
  const bool fusion = !(threshold && std::string(threshold) == "0");
  const int tensors = 64;
  const size_t n = 1000;
  for (int step = 0; step < 2; ++step) {
    auto gate = std::make_shared<Gate>();
    tutti::AsyncOptions options;
    options.ready = gate;
    std::vector<std::vector<int32_t>> xs(tensors, std::vector<int32_t>(n)), ys = xs;
    std::vector<tutti::Handle> hs;
    for (int i = 0; i < tensors; ++i) {
      for (size_t j = 0; j < n; ++j) xs[static_cast<size_t>(i)][j] = value(g_rank, i + step, j);
      // Every other tensor in place.
      int32_t* out = i % 2 ? xs[static_cast<size_t>(i)].data() : ys[static_cast<size_t>(i)].data();
      hs.push_back(world.allreduce_async(fmt::format("f{}", i), xs[static_cast<size_t>(i)].data(),
                                         out, n, DataType::kInt32, ReduceOp::kSum, options));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (auto& h : hs)
      if (h.poll()) fail("a tensor finished before its buffer was ready");
    gate->open = true;
    for (int i = 0; i < tensors; ++i) {
      await(hs[static_cast<size_t>(i)], 60);
      const auto& out = i % 2 ? xs[static_cast<size_t>(i)] : ys[static_cast<size_t>(i)];
      for (size_t j = 0; j < n; ++j) {
        int32_t want = 0;
        for (int r = 0; r < g_size; ++r) want += value(r, i + step, j);
        if (out[j] != want) {
          fail(fmt::format("step {} f{} element {}: {} instead of {}", step, i, j, out[j], want));
          break;
        }
      }
    }
  }
  const tutti::EngineStats s = world.engine_stats();
  const uint64_t want = fusion ? 2 : 2 * tensors;
  if (s.collectives != want)
    fail(fmt::format("{} collectives for 2 steps of {} tensors ready at once, {} expected",
                     s.collectives, tensors, want));
  if (fusion && s.fused != 2 * tensors)
    fail(fmt::format("{} fused, {} expected", s.fused, 2 * tensors));
  if (s.cache_hits != static_cast<uint64_t>(tensors))
    fail(fmt::format("{} cache hits in the second step, {} expected", s.cache_hits, tensors));
  // Scaled and averaged batches (also at 1 rank, where a fused batch is copied tensor by tensor,
  // never packed): float32 sum with prescale 2 and postscale 0.25, and float64 avg, half of each
  // out of place. Exact: the inputs are small integers, the scales powers of two, and avg divides
  // the exact sum once, as the reference does.
  {
    auto gate = std::make_shared<Gate>();
    tutti::AsyncOptions scaled;
    scaled.ready = gate;
    scaled.prescale = 2.0;
    scaled.postscale = 0.25;
    tutti::AsyncOptions plain;
    plain.ready = gate;
    const int k = 8;
    std::vector<std::vector<float>> fx(k, std::vector<float>(n)), fy = fx;
    std::vector<std::vector<double>> dx(k, std::vector<double>(n)), dy = dx;
    std::vector<tutti::Handle> hs;
    for (int i = 0; i < k; ++i) {
      const auto u = static_cast<size_t>(i);
      for (size_t j = 0; j < n; ++j) {
        fx[u][j] = static_cast<float>(value(g_rank, i, j));
        dx[u][j] = static_cast<double>(value(g_rank, i + 1, j));
      }
      hs.push_back(world.allreduce_async(fmt::format("scaled{}", i), fx[u].data(),
                                         i % 2 ? fx[u].data() : fy[u].data(), n, DataType::kFloat32,
                                         ReduceOp::kSum, scaled));
      hs.push_back(world.allreduce_async(fmt::format("avg{}", i), dx[u].data(),
                                         i % 2 ? dx[u].data() : dy[u].data(), n, DataType::kFloat64,
                                         ReduceOp::kAvg, plain));
    }
    gate->open = true;
    for (auto& h : hs) await(h, 60);
    for (int i = 0; i < k; ++i) {
      const auto u = static_cast<size_t>(i);
      const auto& f = i % 2 ? fx[u] : fy[u];
      const auto& d = i % 2 ? dx[u] : dy[u];
      for (size_t j = 0; j < n; ++j) {
        int sum_f = 0, sum_d = 0;
        for (int r = 0; r < g_size; ++r) sum_f += value(r, i, j), sum_d += value(r, i + 1, j);
        const float want_f = static_cast<float>(sum_f) * 0.5f;
        const double want_d = static_cast<double>(sum_d) / g_size;
        if (f[j] != want_f || d[j] != want_d) {
          fail(fmt::format("scaled{} / avg{} element {}: {} / {} instead of {} / {}", i, i, j, f[j],
                           d[j], want_f, want_d));
          break;
        }
      }
    }
    const tutti::EngineStats after = world.engine_stats();
    if (fusion && after.fused != s.fused + 2 * k)
      fail(fmt::format("the scaled and averaged batches: {} fused, {} expected",
                       after.fused - s.fused, 2 * k));
  }
  // Views into one flat buffer, as a trainer with flat gradients has them: on even ranks back to
  // back in the batch's order (the fused collective merges them into one segment), on odd ranks
  // in separate buffers; then the same views in reverse order (nothing merges). Every rank must
  // still reduce the same logical vector, in place and out of place.
  for (const bool reverse : {false, true}) {
    auto gate = std::make_shared<Gate>();
    tutti::AsyncOptions options;
    options.ready = gate;
    const int k = 12;
    const size_t m = 257;
    std::vector<int32_t> flat_in(k * m), flat_out(k * m);
    std::vector<std::vector<int32_t>> own_in(k, std::vector<int32_t>(m)), own_out = own_in;
    const bool views = g_rank % 2 == 0;
    std::vector<tutti::Handle> hs;
    for (int q = 0; q < k; ++q) {
      const int i = reverse ? k - 1 - q : q;
      const auto u = static_cast<size_t>(i);
      int32_t* in = views ? flat_in.data() + u * m : own_in[u].data();
      int32_t* out = views ? flat_out.data() + u * m : own_out[u].data();
      if (reverse) out = in;  // the reverse pass in place
      for (size_t j = 0; j < m; ++j) in[j] = value(g_rank, i + 7, j);
      hs.push_back(world.allreduce_async(fmt::format("view{}", i), in, out, m, DataType::kInt32,
                                         ReduceOp::kSum, options));
    }
    gate->open = true;
    for (auto& h : hs) await(h, 60);
    for (int i = 0; i < k; ++i) {
      const auto u = static_cast<size_t>(i);
      const int32_t* got = views ? (reverse ? flat_in.data() : flat_out.data()) + u * m
                                 : (reverse ? own_in[u].data() : own_out[u].data());
      for (size_t j = 0; j < m; ++j) {
        int32_t want = 0;
        for (int r = 0; r < g_size; ++r) want += value(r, i + 7, j);
        if (got[j] != want) {
          fail(fmt::format("{} view{} element {}: {} instead of {}",
                           reverse ? "reverse" : "forward", i, j, got[j], want));
          break;
        }
      }
    }
  }
  ok(fmt::format("fusion: 2 x {} tensors ready together ran in {} collectives", tensors,
                 s.collectives));
  return 0;
}

// Steps of 64 allreduces until rank 0's autotune file appears (or `seconds` pass), then a few
// more; prints the settings every rank uses at the end (the script compares them with the file).
int scenario_autotune(const tutti::Communicator& world, const std::string& file, double seconds) {
  const size_t n = 4096;
  std::vector<std::vector<float>> xs(64, std::vector<float>(n, 1.0f));
  const auto start = Clock::now();
  int after = -1;
  for (int step = 0; after != 0; ++step) {
    std::vector<tutti::Handle> hs;
    for (int i = 0; i < 64; ++i)
      hs.push_back(world.allreduce_async(fmt::format("t{}", i), xs[static_cast<size_t>(i)].data(),
                                         xs[static_cast<size_t>(i)].data(), n, DataType::kFloat32,
                                         ReduceOp::kMax));
    for (auto& h : hs) await(h, 60);
    int32_t written = 0;
    if (g_rank == 0) written = access(file.c_str(), R_OK) == 0 ? 1 : 0;
    world.broadcast(&written, 1, DataType::kInt32, 0);
    if (after < 0 && (written || seconds_since(start) > seconds)) after = 5;
    if (after > 0) --after;
  }
  const tutti::EngineStats s = world.engine_stats();
  std::printf("rank %d: fusion_threshold=%llu cycle_time_us=%llu\n", g_rank,
              static_cast<unsigned long long>(s.fusion_threshold),
              static_cast<unsigned long long>(s.cycle_time_us));
  ok(fmt::format("autotune: ran {:.1f} s", seconds_since(start)));
  return 0;
}

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h >> 1;  // fits int64
}

// Every rank's message must be the same: compare min and max of its hash over the world.
void same_everywhere(const tutti::Communicator& world, const std::string& what,
                     const std::string& message) {
  int64_t h = static_cast<int64_t>(fnv(message));
  int64_t lo = h, hi = h;
  world.allreduce(&lo, &lo, 1, DataType::kInt64, ReduceOp::kMin);
  world.allreduce(&hi, &hi, 1, DataType::kInt64, ReduceOp::kMax);
  if (lo != hi) fail(fmt::format("{}: the message differs between ranks: {}", what, message));
}

void expect_works(const tutti::Communicator& c, const std::string& name) {
  std::vector<float> x(1000, 1.0f), y(1000, 0.0f);
  await(c.allreduce_async(name, x.data(), y.data(), x.size(), DataType::kFloat32, ReduceOp::kSum),
        60);
  if (y[0] != static_cast<float>(c.size()) || y[999] != static_cast<float>(c.size()))
    fail(fmt::format("{}: {} instead of {}", name, y[0], c.size()));
}

int scenario_mismatch(const tutti::Communicator& world) {
  expect_works(world, "before");
  std::vector<float> x(12, 1.0f), y(12);
  const size_t count = g_rank == 1 % g_size && g_size > 1 ? 12 : 10;
  const auto start = Clock::now();
  std::string message;
  try {
    await(world.allreduce_async("weights", x.data(), y.data(), count, DataType::kFloat32,
                                ReduceOp::kSum),
          30);
    if (g_size > 1) fail("a mismatched allreduce succeeded");
  } catch (const tutti::Error& e) {
    message = e.what();
    if (e.code() != tutti::ErrorCode::kMismatch) fail(fmt::format("not kMismatch: {}", message));
    if (message.find("'weights'") == std::string::npos ||
        message.find("count 10 vs 12") == std::string::npos ||
        message.find("rank 1") == std::string::npos)
      fail(fmt::format("the message does not name the tensor, the difference and rank 1: {}",
                       message));
  }
  const double took = seconds_since(start);
  if (took > 5) fail(fmt::format("the mismatch took {:.1f} s to fail", took));
  if (g_size > 1) same_everywhere(world, "mismatch", message);
  if (g_rank == 0) std::printf("message: %s\n", message.c_str());
  expect_works(world, "after");
  ok(fmt::format("mismatch: every rank failed in {:.2f} s with the same message", took));
  return 0;
}

int scenario_stall(const tutti::Communicator& world) {
  expect_works(world, "before");
  const int lonely = g_size - 1;
  std::vector<float> x(100, 1.0f), y(100);
  const auto start = Clock::now();
  std::string message;
  if (g_rank != lonely) {
    try {
      await(world.allreduce_async("lonely", x.data(), y.data(), x.size(), DataType::kFloat32,
                                  ReduceOp::kSum),
            60);
      fail("a tensor one rank never submitted completed");
    } catch (const tutti::Error& e) {
      message = e.what();
      if (e.code() != tutti::ErrorCode::kTimeout) fail(fmt::format("not kTimeout: {}", message));
      if (message.find(fmt::format("rank {} did not submit", lonely)) == std::string::npos ||
          message.find("'lonely'") == std::string::npos)
        fail(fmt::format("the message does not name 'lonely' and rank {}: {}", lonely, message));
    }
    const double took = seconds_since(start);
    if (took > 15) fail(fmt::format("the stall took {:.1f} s to fail", took));
    if (g_rank == 0) std::printf("message: %s\n", message.c_str());
  }
  world.barrier();
  expect_works(world, "after");
  ok("stall: the handles failed naming the missing rank; the engine goes on");
  return 0;
}

int scenario_kill(const tutti::Communicator& world, const std::string& pid_dir) {
  if (!pid_dir.empty())
    if (FILE* f = std::fopen(fmt::format("{}/{}.pid", pid_dir, g_rank).c_str(), "w")) {
      std::fprintf(f, "%d\n", getpid());
      std::fclose(f);
    }
  std::vector<float> x(4096, 1.0f), y(4096);
  for (int i = 0;; ++i) {
    std::vector<tutti::Handle> handles;
    for (int k = 0; k < 8; ++k)
      handles.push_back(world.allreduce_async(fmt::format("t{}", k), x.data(), y.data(), x.size(),
                                              DataType::kFloat32, ReduceOp::kSum));
    for (auto& h : handles) {
      try {
        await(h, 100);
      } catch (const tutti::Error& e) {
        std::printf("rank %d: engine error after %d steps: %s\n", g_rank, i, e.what());
        std::fflush(stdout);
        return 3;
      }
    }
  }
}

int scenario_join(const tutti::Communicator& world) {
  const int batches = g_rank + 1;
  const size_t n = 1000;
  for (int b = 0; b < batches; ++b) {
    std::vector<float> x(n), y(n);
    for (size_t j = 0; j < n; ++j) x[j] = static_cast<float>(value(g_rank, b, j));
    float one = 1.0f;
    auto h1 =
        world.allreduce_async("grad", x.data(), y.data(), n, DataType::kFloat32, ReduceOp::kSum);
    auto h2 = world.allgather_async("rows", &one, 1, 1, DataType::kFloat32);
    try {
      await(h1, 60);
      await(h2, 60);
    } catch (const tutti::Error& e) {
      fail(fmt::format("batch {}: {}", b, e.what()));
      continue;
    }
    for (size_t j = 0; j < n; ++j) {
      float want = 0;
      for (int r = b; r < g_size; ++r)
        want += static_cast<float>(value(r, b, j));  // ranks with > b batches
      if (y[j] != want) {
        fail(fmt::format("batch {} element {}: {} instead of {}", b, j, y[j], want));
        break;
      }
    }
    if (h2.output().size() != static_cast<size_t>(g_size - b) * sizeof(float))
      fail(fmt::format("batch {}: allgather gave {} bytes, {} ranks were active", b,
                       h2.output().size(), g_size - b));
  }
  try {
    auto j = world.join();
    await(j, 60);
    if (j.last_joined() != g_size - 1)
      fail(fmt::format("last_joined {} instead of {}", j.last_joined(), g_size - 1));
  } catch (const tutti::Error& e) {
    fail(fmt::format("join: {}", e.what()));
  }
  expect_works(world, "after join");
  ok(fmt::format("join: uneven batches 1..{} with allreduce and allgather", g_size));
  return 0;
}

int scenario_sets(const tutti::Communicator& world) {
  if (g_size < 3) {
    ok("sets: needs 3 ranks");
    return 0;
  }
  std::vector<int> a, b;
  for (int r = 0; r < g_size - 1; ++r) a.push_back(r);
  for (int r = 1; r < g_size; ++r) b.push_back(r);
  tutti::Communicator ca, cb;
  if (g_rank < g_size - 1) ca = world.group(a);
  if (g_rank > 0) cb = world.group(b);
  const auto drive = [&](const tutti::Communicator& c, const std::vector<int>& members, int tag) {
    if (!c) return;
    const size_t n = 777;
    std::vector<std::vector<float>> xs(40, std::vector<float>(n)), ys(40, std::vector<float>(n));
    std::vector<tutti::Handle> hs;
    for (int i = 0; i < 40; ++i) {
      for (size_t j = 0; j < n; ++j)
        xs[static_cast<size_t>(i)][j] = static_cast<float>(value(g_rank, i + tag, j));
      hs.push_back(c.allreduce_async(fmt::format("p{}", i), xs[static_cast<size_t>(i)].data(),
                                     ys[static_cast<size_t>(i)].data(), n, DataType::kFloat32,
                                     ReduceOp::kSum));
    }
    for (int i = 0; i < 40; ++i) {
      try {
        await(hs[static_cast<size_t>(i)], 60);
      } catch (const tutti::Error& e) {
        fail(fmt::format("set {} p{}: {}", tag, i, e.what()));
        continue;
      }
      for (size_t j = 0; j < n; ++j) {
        float want = 0;
        for (int r : members) want += static_cast<float>(value(r, i + tag, j));
        if (ys[static_cast<size_t>(i)][j] != want) {
          fail(fmt::format("set {} p{} element {}: {} instead of {}", tag, i, j,
                           ys[static_cast<size_t>(i)][j], want));
          break;
        }
      }
    }
  };
  std::thread ta([&] { drive(ca, a, 0); });
  std::thread tb([&] { drive(cb, b, 100); });
  ta.join();
  tb.join();
  world.barrier();
  ok(fmt::format("sets: two overlapping process sets of {} ranks, driven at once", g_size - 1));
  return 0;
}

int scenario_timeline(const tutti::Communicator& world, const std::string& path) {
  // Before: off. During: on (several fused tensors). After: off again.
  expect_works(world, "untraced");
  tutti::start_timeline(path);
  std::vector<std::vector<float>> xs(6, std::vector<float>(5000, 1.0f)), ys = xs;
  std::vector<tutti::Handle> hs;
  for (int i = 0; i < 6; ++i)
    hs.push_back(world.allreduce_async(fmt::format("layer{}", i), xs[static_cast<size_t>(i)].data(),
                                       ys[static_cast<size_t>(i)].data(), 5000, DataType::kFloat32,
                                       ReduceOp::kSum));
  std::atomic<int> called{0};
  hs.back().then([&](const tutti::Error*) { ++called; });
  for (auto& h : hs) await(h, 60);
  expect_works(world, "traced");
  tutti::stop_timeline();
  if (called.load() != 1) fail("the completion callback did not run once");
  expect_works(world, "untraced.again");
  ok("timeline: started and stopped at run time");
  return 0;
}

// What a careless caller does: every mistake is a clear error at once, and the engine goes on.
int scenario_misuse(const tutti::Communicator& world) {
  const auto refused = [&](const std::string& what, const std::function<void()>& call,
                           const std::string& expect) {
    try {
      call();
      fail(fmt::format("{}: accepted", what));
    } catch (const tutti::Error& e) {
      if (std::string(e.what()).find(expect) == std::string::npos)
        fail(fmt::format("{}: the message lacks '{}': {}", what, expect, e.what()));
    }
  };
  std::vector<float> x(64, 1.0f), y(64);
  int32_t ix[4] = {1, 2, 3, 4};
  auto first =
      world.allreduce_async("busy", x.data(), y.data(), 64, DataType::kFloat32, ReduceOp::kSum);
  refused(
      "a name in flight",
      [&] {
        world.allreduce_async("busy", x.data(), y.data(), 64, DataType::kFloat32, ReduceOp::kSum);
      },
      "already in flight");
  refused(
      "an empty name",
      [&] {
        world.allreduce_async("", x.data(), y.data(), 64, DataType::kFloat32, ReduceOp::kSum);
      },
      "name is empty");
  refused(
      "a null buffer",
      [&] {
        world.allreduce_async("null", nullptr, y.data(), 64, DataType::kFloat32, ReduceOp::kSum);
      },
      "send buffer is null");
  refused(
      "a root outside the world",
      [&] { world.broadcast_async("root", x.data(), 64, DataType::kFloat32, g_size); },
      "not a rank");
  refused(
      "alltoall splits of the wrong length",
      [&] {
        std::vector<size_t> splits(static_cast<size_t>(g_size) + 1, 0);
        world.alltoall_async("a2a", x.data(), splits, 1, DataType::kFloat32);
      },
      "splits given");
  refused(
      "rows x row size that wraps around",
      [&] { world.allgather_async("huge", x.data(), SIZE_MAX / 2, 4, DataType::kFloat32); },
      "beyond any buffer");
  refused(
      "a bitwise op on floats",
      [&] {
        world.allreduce_async("band", x.data(), y.data(), 64, DataType::kFloat32, ReduceOp::kBand);
      },
      "not defined on float32");
  refused(
      "scales on integers",
      [&] {
        tutti::AsyncOptions o;
        o.postscale = 0.5;
        world.allreduce_async("scaled", ix, ix, 4, DataType::kInt32, ReduceOp::kSum, o);
      },
      "prescale and postscale");
  await(first, 60);
  // A receive buffer too small for an allgather fails this rank's handle only.
  std::vector<float> small(2 * static_cast<size_t>(g_size));  // rank 0 claims room for 1 only
  auto h = world.allgather_async("gather", x.data(), 2, 1, DataType::kFloat32, small.data(),
                                 g_rank == 0 ? 1 : 2 * static_cast<size_t>(g_size));
  try {
    await(h, 60);
    if (g_rank == 0 && g_size > 0) fail("a too small receive buffer was accepted");
  } catch (const tutti::Error& e) {
    if (g_rank != 0 || std::string(e.what()).find("receive buffer holds 1") == std::string::npos)
      fail(fmt::format("too small receive buffer: {}", e.what()));
  }
  // Waiting inside a completion callback would stop the engine: refused there.
  std::atomic<int> refused_in_callback{0};
  auto other = world.allreduce_async("other", ix, ix, 4, DataType::kInt32, ReduceOp::kSum);
  std::vector<float> z(8, 1.0f);
  auto pending = world.allreduce_async("pending.late", z.data(), z.data(), 8, DataType::kFloat32,
                                       ReduceOp::kSum);
  other.then([&](const tutti::Error*) {
    try {
      tutti::Handle(pending).wait();
    } catch (const tutti::Error&) {
      ++refused_in_callback;
    }
  });
  await(other, 60);
  await(pending, 60);
  if (!pending.poll()) fail("pending.late did not finish");
  // (The callback may have run after pending.late finished: then its wait returned at once.)
  (void)refused_in_callback;
  // Completion callbacks run on the engine's own thread, also when the waiting thread runs the
  // engine's cycles (--unbounded-waits), never on the thread that waits. Ranks other than 0 give
  // the callback before the barrier, rank 0 submits after it: the handle cannot finish before.
  if (g_size > 1) {
    std::vector<float> cb(16, 1.0f);
    tutti::Handle h;
    std::atomic<bool> ran{false};
    std::thread::id where;
    const auto submit = [&] {
      return world.allreduce_async("callback.thread", cb.data(), cb.data(), cb.size(),
                                   DataType::kFloat32, ReduceOp::kSum);
    };
    if (g_rank != 0) {
      h = submit();
      h.then([&](const tutti::Error*) {
        where = std::this_thread::get_id();
        ran = true;
      });
    }
    world.barrier();
    if (g_rank == 0) h = submit();
    await(h, 60);
    if (g_rank != 0) {
      const auto start = Clock::now();
      while (!ran.load() && seconds_since(start) < 30)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!ran.load())
        fail("a completion callback did not run within 30 s of its handle finishing");
      else if (where == std::this_thread::get_id())
        fail("a completion callback ran on the thread that waited, not on the engine's");
    }
    if (cb[0] != static_cast<float>(g_size)) fail(fmt::format("callback.thread: {}", cb[0]));
  }
  expect_works(world, "after.misuse");
  ok("misuse: each mistake refused with a clear message; the engine goes on");
  return 0;
}

// Every rank waits without a timeout (so the waiting threads run the cycles) for a name that no
// other rank submits: nothing can run until the stall timeout fails them all. Meanwhile the
// cycles must be paced, about one per TUTTI_CYCLE_TIME (1 ms), not spun back to back by every
// rank (which ran ~300,000 empty cycles a second and took every core).
int scenario_pacing(const tutti::Communicator& world) {
  expect_works(world, "before");
  const uint64_t before = world.engine_stats().cycles;
  std::vector<float> x(10, 1.0f);
  const auto start = Clock::now();
  auto h = world.allreduce_async(fmt::format("alone.{}", g_rank), x.data(), x.data(), x.size(),
                                 DataType::kFloat32, ReduceOp::kSum);
  try {
    h.wait();
    if (g_size > 1) fail("a name only this rank submitted completed");
  } catch (const tutti::Error& e) {
    if (e.code() != tutti::ErrorCode::kTimeout)
      fail(fmt::format("not the stall timeout: {}", e.what()));
  }
  const double took = seconds_since(start);
  const uint64_t cycles = world.engine_stats().cycles - before;
  // At most one quiet cycle per millisecond, three times over for the active ones and slack.
  const auto limit = static_cast<uint64_t>(took * 3000) + 100;
  if (cycles > limit)
    fail(fmt::format("{} cycles in {:.1f} s of waiting: spinning, not paced (limit {})", cycles,
                     took, limit));
  expect_works(world, "after");
  ok(fmt::format("pacing: {} cycles in {:.1f} s while every rank waited", cycles, took));
  return 0;
}

// A trainer that enqueues its tensors and then waits for them: once the waiting threads took a
// run of bursts, enqueues stop waking the engine thread (standby), which looks every 10 ms
// instead. Then a burst nobody waits for (only polled) must still run within a few cycle times
// (not a heartbeat, 1 s), which ends standby; callbacks must still run on the engine thread; every
// sum stays exact.
int scenario_standby(const tutti::Communicator& world) {
  constexpr int kTensors = 16;
  constexpr size_t kCount = 1001;
  std::vector<std::vector<float>> x(kTensors, std::vector<float>(kCount));
  const auto expected = [&](int t, int step) {
    // sum over ranks r of (r + t + step)
    return static_cast<float>(g_size * (t + step) + g_size * (g_size - 1) / 2);
  };
  const auto submit = [&](int t, int step) {
    std::fill(x[t].begin(), x[t].end(), static_cast<float>(g_rank + t + step));
    return world.allreduce_async(fmt::format("standby.{}", t), x[t].data(), x[t].data(), kCount,
                                 DataType::kFloat32, ReduceOp::kSum);
  };
  const auto check_sum = [&](int t, int step, const std::string& what) {
    if (x[t][0] != expected(t, step) || x[t][kCount - 1] != expected(t, step))
      fail(fmt::format("{}: tensor {} step {}: {} and {}, expected {}", what, t, step, x[t][0],
                       x[t][kCount - 1], expected(t, step)));
  };
  int step = 0;
  // Waited steps (every rank the same number) until every rank is in standby. Where ranks
  // outnumber the cores, a caller descheduled between its enqueues and its wait lets the engine
  // thread take that burst, so this may take many steps there.
  const auto began = Clock::now();
  const auto until_standby = [&](const std::string& what) {
    for (int waited = 0;; ++waited, ++step) {
      int late = seconds_since(began) > 60 ? 1 : 0;
      int any_late = 0;
      world.allreduce(&late, &any_late, 1, DataType::kInt32, ReduceOp::kMax);
      if (any_late) break;
      std::vector<tutti::Handle> hs;
      for (int t = kTensors; t-- > 0;) hs.push_back(submit(t, step));
      for (auto& h : hs) h.wait();  // no timeout: this thread runs the cycles
      for (int t = 0; t < kTensors; ++t) check_sum(t, step, what);
      int mine = world.engine_stats().standby ? 1 : 0;
      int all = 0;
      world.allreduce(&mine, &all, 1, DataType::kInt32, ReduceOp::kMin);
      if (all == 1) return waited + 1;
    }
    fail(what + ": not every rank's engine entered standby in 60 s of waited steps");
    return -1;
  };
  const int first = until_standby("waited");
  if (first < 0) return 1;

  // A polled burst: nobody waits, so only the engine thread's own look can run it.
  const auto start = Clock::now();
  std::vector<tutti::Handle> hs;
  for (int t = kTensors; t-- > 0;) hs.push_back(submit(t, step));
  for (auto& h : hs)
    while (!h.poll()) {
      if (seconds_since(start) > 20) {
        fail("a polled burst in standby did not finish in 20 s");
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  const double polled = seconds_since(start);
  for (int t = 0; t < kTensors; ++t) check_sum(t, step, "polled");
  ++step;
  if (polled > 0.5)
    fail(fmt::format("a polled burst in standby took {:.3f} s (a heartbeat, not the 10 ms look)",
                     polled));
  if (world.engine_stats().standby) fail("standby went on after the engine thread ran a burst");
  world.barrier();

  // Standby again; a callback still runs once, on the engine thread.
  const int second = until_standby("waited again");
  if (second < 0) return 1;
  std::atomic<int> called{0};
  std::atomic<bool> on_caller{false};
  const auto caller = std::this_thread::get_id();
  auto h = submit(0, step);
  h.then([&](const tutti::Error* e) {
    if (e) fail(fmt::format("callback: {}", e->what()));
    if (std::this_thread::get_id() == caller) on_caller = true;
    ++called;
  });
  h.wait();
  check_sum(0, step, "callback");
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (called.load() == 0 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (called.load() != 1) fail(fmt::format("the callback ran {} times, not once", called.load()));
  if (on_caller) fail("the callback ran on the waiting caller's thread, not the engine's");
  expect_works(world, "after");
  ok(fmt::format("standby: entered after {} and {} waited steps; a polled burst took {:.1f} ms",
                 first, second, polled * 1e3));
  return 0;
}

// abort() on a communicator reaches its engine: every rank's pending handles fail with kAborted
// naming the aborting rank and the reason, and later submissions are refused with that cause.
int scenario_abort(const tutti::Communicator& world) {
  expect_works(world, "before");
  tutti::Communicator set = world.dup();
  expect_works(set, "set.before");
  std::vector<float> x(100, 1.0f);
  // Only rank 1 submits: the handle can only end through the abort.
  tutti::Handle h;
  if (g_rank == 1)
    h = set.allreduce_async("never", x.data(), x.data(), 100, DataType::kFloat32, ReduceOp::kSum);
  world.barrier();
  if (g_rank == 0) set.abort("the trainer gave up");
  const auto check = [&](const tutti::Error& e, const std::string& what) {
    if (e.code() != tutti::ErrorCode::kAborted ||
        std::string(e.what()).find("the trainer gave up") == std::string::npos)
      fail(fmt::format("{}: not kAborted with the reason: {}", what, e.what()));
  };
  if (h) {
    try {
      await(h, 30);
      fail("a pending handle survived the abort");
    } catch (const tutti::Error& e) {
      check(e, "pending");
    }
  }
  // Later submissions on the aborted set fail with the same cause (once the engine has seen it).
  for (int attempt = 0;; ++attempt) {
    try {
      await(
          set.allreduce_async("after", x.data(), x.data(), 100, DataType::kFloat32, ReduceOp::kSum),
          30);
      fail("a submission after the abort succeeded");
      break;
    } catch (const tutti::Error& e) {
      check(e, "after");
      break;
    }
  }
  world.barrier();
  expect_works(world, "world.after");  // other communicators go on
  ok("abort: the set's engine failed everything with the reason; the world goes on");
  return 0;
}

}  // namespace

// One step of the replay scenario: the same g_replay_tensors float32 names every step, enqueued
// last first (as a backward pass), except where `variant` changes something for this step.
enum class ReplayVariant { kSame, kOtherOrder, kGrown, kLate, kMismatch, kExtra, kSplit, kCut };
// Tensors a step (--tensors, at least 8: the variants change tensors 3, 5 and 7).
int g_replay_tensors = 40;
bool g_expect_replays = false;
bool g_replay_cut = false;

void replay_step(const tutti::Communicator& world, int step, ReplayVariant v) {
  const bool extra = v == ReplayVariant::kExtra;
  const int tensors = g_replay_tensors + (extra ? 1 : 0);
  const auto count_of = [&](int i) {
    return static_cast<size_t>(50 + 37 * i) + (v == ReplayVariant::kGrown && i == 7 ? 1 : 0);
  };
  // kMismatch: the last rank submits tensor 3 as int32 (every rank must fail it, rank 0 too).
  const bool mismatched = v == ReplayVariant::kMismatch && g_size > 1;
  const auto int32_here = [&](int i) { return mismatched && i == 3 && g_rank == g_size - 1; };
  std::vector<int> order;
  for (int i = tensors - 1; i >= 0; --i) order.push_back(i);
  if (v == ReplayVariant::kOtherOrder && g_rank == 1 % g_size)
    std::reverse(order.begin(), order.end());
  std::vector<std::vector<float>> xs(static_cast<size_t>(tensors)), ys = xs;
  std::vector<std::vector<int32_t>> ixs(static_cast<size_t>(tensors));
  std::vector<tutti::Handle> hs(static_cast<size_t>(tensors));
  const auto submit = [&](int i) {
    const auto u = static_cast<size_t>(i);
    const std::string name = fmt::format("replay.{}", i);
    if (int32_here(i)) {
      ixs[u].assign(count_of(i), 1);
      hs[u] = world.allreduce_async(name, ixs[u].data(), ixs[u].data(), count_of(i),
                                    DataType::kInt32, ReduceOp::kSum);
      return;
    }
    xs[u].resize(count_of(i));
    ys[u].resize(count_of(i));
    for (size_t j = 0; j < count_of(i); ++j)
      xs[u][j] = static_cast<float>(value(g_rank, i + step, j));
    // Every third tensor in place.
    float* out = i % 3 == 0 ? xs[u].data() : ys[u].data();
    hs[u] = world.allreduce_async(name, xs[u].data(), out, count_of(i), DataType::kFloat32,
                                  ReduceOp::kSum);
  };
  for (size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    // kLate: rank 0 submits tensor 5 after everything else, 30 ms later; kSplit: every rank
    // submits in two bursts 20 ms apart; kCut: 12 ms apart (a thread descheduled for a few
    // scheduler ticks in the middle of its burst; run with TUTTI_CYCLE_TIME=2ms: longer than a
    // cycle time and than the engine thread's standby poll, shorter than its patience for the
    // rest of a plan's step).
    if (v == ReplayVariant::kLate && g_rank == 0 && i == 5) continue;
    if (v == ReplayVariant::kSplit && k == order.size() / 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (v == ReplayVariant::kCut && k == order.size() / 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(12));
    submit(i);
  }
  if (v == ReplayVariant::kLate && g_rank == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    submit(5);
  }
  for (int i = 0; i < tensors; ++i) {
    const auto u = static_cast<size_t>(i);
    if (mismatched && i == 3) {
      try {
        await(hs[u], 60);
        fail(fmt::format("step {}: tensor 3, int32 on rank {}, ran", step, g_size - 1));
      } catch (const tutti::Error& e) {
        if (e.code() != tutti::ErrorCode::kMismatch)
          fail(fmt::format("step {}: tensor 3 failed, but not as a mismatch: {}", step, e.what()));
      }
      continue;
    }
    await(hs[u], 60);
    const auto& out = i % 3 == 0 ? xs[u] : ys[u];
    for (size_t j = 0; j < count_of(i); ++j) {
      float want = 0;
      for (int r = 0; r < g_size; ++r) want += static_cast<float>(value(r, i + step, j));
      if (out[j] != want) {
        fail(fmt::format("step {} ({}): replay.{} element {}: {} instead of {}", step,
                         static_cast<int>(v), i, j, out[j], want));
        break;
      }
    }
  }
}

// replay: a training loop (the same names in the same order every step) replays the engine's
// plan; a step that differs on one rank or on every rank falls back within the cycle, with exact
// results; the loop afterwards replays again.
int scenario_replay(const tutti::Communicator& world) {
  int step = 0;
  // Steps until `want` more replays happened (a cycle that took half a step's burst does not
  // replay; a loaded machine may do that now and then), at most `limit` steps.
  const auto loop_until_replays = [&](uint64_t want, int limit, const char* phase) {
    const uint64_t before = world.engine_stats().replayed;
    int ran = 0;
    for (int64_t everywhere = 0; ran < limit && everywhere == 0; ++ran) {
      replay_step(world, step++, ReplayVariant::kSame);
      // Every rank runs the same steps (one may replay where another does not): they go on until
      // each has replayed `want` times.
      everywhere = world.engine_stats().replayed >= before + want ? 1 : 0;
      world.allreduce(&everywhere, &everywhere, 1, DataType::kInt64, ReduceOp::kMin);
    }
    // Held to only with --expect-replays: a step is replayed only when its burst of enqueues
    // falls into one cycle, and the engine thread's cycle may cut a burst whose enqueues are slow
    // (a sanitizer's build, ranks beside other work on 2 CPUs). Where the waiting thread runs the
    // cycles (--unbounded-waits) and a step is short, bursts stay whole.
    const uint64_t got = world.engine_stats().replayed - before;
    if (g_expect_replays && got < want)
      fail(fmt::format("{}: {} replays in {} steps of the same names, {} expected", phase, got, ran,
                       want));
  };
  loop_until_replays(2, 100, "the first steps");
  {
    // The plan's first name, in flight, is refused again (the names in flight keep the plan's
    // names by a flag each: found at the cursor the first time, by look-up the second), then runs
    // alone with an exact sum; the loop replays again after it.
    const int first = g_replay_tensors - 1;
    const std::string name = fmt::format("replay.{}", first);
    const size_t count = static_cast<size_t>(50 + 37 * first);
    std::vector<float> x(count, 1.0f);
    tutti::Handle h =
        world.allreduce_async(name, x.data(), x.data(), count, DataType::kFloat32, ReduceOp::kSum);
    try {
      world.allreduce_async(name, x.data(), x.data(), count, DataType::kFloat32, ReduceOp::kSum);
      fail(name + " was taken a second time while in flight");
    } catch (const tutti::Error& e) {
      if (std::string(e.what()).find("already in flight") == std::string::npos)
        fail(fmt::format("{} in flight, enqueued again: {}", name, e.what()));
    }
    await(h, 60);
    if (x.front() != static_cast<float>(g_size) || x.back() != static_cast<float>(g_size))
      fail(fmt::format("{} alone: {} and {} instead of {}", name, x.front(), x.back(), g_size));
    loop_until_replays(1, 100, "the loop after a name refused in flight");
  }
  if (g_replay_cut) {
    // Steps cut in two by a pause: the engine thread waits for the rest of the plan's step, which
    // replays whole. A pause stretched past that patience (a loaded machine) cuts the step and
    // drops the plan, which two whole steps make again.
    constexpr uint64_t kWant = 5;
    uint64_t cut_replays = 0;
    int ran = 0;
    for (; ran < 60 && cut_replays < kWant; ++ran) {
      const uint64_t before = world.engine_stats().replayed;
      replay_step(world, step++, ReplayVariant::kCut);
      int64_t replayed = world.engine_stats().replayed > before ? 1 : 0;
      world.allreduce(&replayed, &replayed, 1, DataType::kInt64, ReduceOp::kMin);
      if (replayed != 0)
        ++cut_replays;
      else
        loop_until_replays(1, 100, "the loop after a cut step that did not replay");
    }
    if (g_expect_replays && cut_replays < kWant)
      fail(fmt::format("steps cut by a 12 ms pause: {} of {} replayed, {} expected", cut_replays,
                       ran, kWant));
  }
  const std::pair<ReplayVariant, const char*> variants[] = {
      {ReplayVariant::kOtherOrder, "rank 1 in another order"},
      {ReplayVariant::kGrown, "a tensor one element longer on every rank"},
      {ReplayVariant::kLate, "a name late on rank 0"},
      {ReplayVariant::kMismatch, "a dtype that disagrees on the last rank"},
      {ReplayVariant::kExtra, "an extra name"},
      {ReplayVariant::kSplit, "every rank submits in two bursts"}};
  for (const auto& [variant, what] : variants) {
    replay_step(world, step++, variant);
    // A step that left the response cache as it was (another order on one rank, a late name, a
    // burst in two) leaves every rank's plan too: with --expect-replays one of the next two steps
    // replays. A dropped plan would replay at the third at the earliest (two whole steps make it
    // again); two, not one, because a loaded machine may cut a step now and then.
    if (variant == ReplayVariant::kOtherOrder || variant == ReplayVariant::kLate ||
        variant == ReplayVariant::kSplit)
      loop_until_replays(1, 2, fmt::format("the two steps after {}", what).c_str());
    // Back to the loop: it replays again (a step that changed the cache made a new plan).
    loop_until_replays(1, 100, what);
  }
  const tutti::EngineStats s = world.engine_stats();
  ok(fmt::format("replay: {} steps of {} names, {} cycles, {} replayed; every variant exact", step,
                 g_replay_tensors, s.cycles, s.replayed));
  return 0;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fprintf(stderr, "usage: engine_check random|mismatch|stall|kill|join|sets|timeline ...\n");
    return 2;
  }
  const auto option = [&](const std::string& name, const std::string& fallback) {
    for (size_t i = 1; i + 1 < args.size(); ++i)
      if (args[i] == name) return args[i + 1];
    return fallback;
  };
  try {
    tutti::World w;
    const tutti::Communicator& world = w.communicator();
    g_rank = world.rank();
    g_unbounded_waits = std::find(args.begin(), args.end(), "--unbounded-waits") != args.end();
    g_size = world.size();
    const std::string& s = args[0];
    int rc = 2;
    if (s == "random")
      rc = scenario_random(world, std::stoi(option("--tensors", "300")),
                           std::stoi(option("--steps", "3")), std::stoi(option("--threads", "3")));
    else if (s == "mismatch")
      rc = scenario_mismatch(world);
    else if (s == "stall")
      rc = scenario_stall(world);
    else if (s == "kill")
      rc = scenario_kill(world, option("--pid-dir", ""));
    else if (s == "join")
      rc = scenario_join(world);
    else if (s == "sets")
      rc = scenario_sets(world);
    else if (s == "autotune")
      rc = scenario_autotune(world, option("--file", ""), std::stod(option("--seconds", "30")));
    else if (s == "abort")
      rc = scenario_abort(world);
    else if (s == "pacing")
      rc = scenario_pacing(world);
    else if (s == "standby")
      rc = scenario_standby(world);
    else if (s == "fusion")
      rc = scenario_fusion(world);
    else if (s == "replay") {
      g_replay_tensors = std::max(8, std::stoi(option("--tensors", "40")));
      g_expect_replays = std::find(args.begin(), args.end(), "--expect-replays") != args.end();
      g_replay_cut = std::find(args.begin(), args.end(), "--cut") != args.end();
      rc = scenario_replay(world);
    } else if (s == "misuse")
      rc = scenario_misuse(world);
    else if (s == "timeline")
      rc = scenario_timeline(world, option("--path", "/tmp/tutti-timeline.json"));
    if (rc != 0) return rc;
  } catch (const tutti::Error& e) {
    fail(e.what());
  }
  return g_failures.load() == 0 ? 0 : 1;
}
