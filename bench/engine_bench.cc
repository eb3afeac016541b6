#include "engine_bench.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <numeric>

#include "bench_options.hpp"
#include "tutti/tutti.hpp"

namespace tutti::bench {
namespace {

// CPU time of every thread of this process (the caller's and the engine's), in seconds.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Context switches of every thread of this process so far: voluntary (a thread slept) plus
// involuntary (it was preempted or yielded). On more ranks than cores each one is a rank's turn.
double process_context_switches() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_nvcsw) + static_cast<double>(u.ru_nivcsw);
}

using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  std::vector<size_t> sizes;  // elements (float32), in parameter order
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Seconds per step of `body`, the slowest rank's (each rank's mean over `steps`, after a barrier).
template <typename Body>
double timed(const Communicator& comm, int steps, Body&& body, double* cpu_per_step = nullptr,
             double* switches_per_step = nullptr) {
  comm.barrier();
  const double switches_start = process_context_switches();
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) body();
  double t = std::chrono::duration<double>(Clock::now() - start).count() / steps;
  double cpu = (process_cpu_seconds() - cpu_start) / steps;
  double switches = (process_context_switches() - switches_start) / steps;
  comm.allreduce(&t, &t, 1, DataType::kFloat64, ReduceOp::kMax);
  comm.allreduce(&cpu, &cpu, 1, DataType::kFloat64, ReduceOp::kSum);
  comm.allreduce(&switches, &switches, 1, DataType::kFloat64, ReduceOp::kSum);
  if (cpu_per_step != nullptr) *cpu_per_step = cpu / comm.size();
  if (switches_per_step != nullptr) *switches_per_step = switches / comm.size();
  return t;
}

}  // namespace

std::vector<size_t> resnet50_parameter_sizes() {
  std::vector<size_t> p;
  const auto conv = [&](size_t out, size_t in, size_t k) { p.push_back(out * in * k * k); };
  const auto bn = [&](size_t c) {
    p.push_back(c);
    p.push_back(c);
  };
  conv(64, 3, 7);
  bn(64);
  size_t in = 64;
  const size_t blocks[4] = {3, 4, 6, 3};
  for (size_t layer = 0; layer < 4; ++layer) {
    const size_t width = size_t{64} << layer;
    for (size_t b = 0; b < blocks[layer]; ++b) {
      conv(width, in, 1);
      bn(width);
      conv(width, width, 3);
      bn(width);
      conv(width * 4, width, 1);
      bn(width * 4);
      if (b == 0) {  // the downsample path of each layer's first block
        conv(width * 4, in, 1);
        bn(width * 4);
      }
      in = width * 4;
    }
  }
  p.push_back(1000 * 2048);
  p.push_back(1000);
  return p;
}

int run_engine_bench(std::span<const std::string> args) {
  CLI::App app{"tutti-bench engine: a training step's gradient sync per second, three ways"};
  std::string which = "256x16K";
  int steps = 20;
  int rounds = 5;
  app.add_option("--case", which,
                 "TxS (T tensors of S bytes, e.g. 256x16K) or resnet50 (161 gradients, 25.6 M "
                 "float32)")
      ->capture_default_str();
  app.add_option("-n,--steps", steps, "steps per measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--rounds", rounds, "interleaved rounds (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  std::string order = "backward";
  app.add_option("--order", order,
                 "the order (b) enqueues the tensors, which lie back to back in one buffer: "
                 "backward (last first, as a backward pass) or forward (buffer order, which the "
                 "fused collective merges into one segment)")
      ->check(CLI::IsMember({"backward", "forward"}))
      ->capture_default_str();
  std::string modes = "abc";
  app.add_option("--modes", modes,
                 "which of (a) (b) (c) (d) to run, e.g. b; (d) is (c) after one 136-byte "
                 "bitwise-and allreduce, what the engine's negotiation adds to a step")
      ->capture_default_str();
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  Case c;
  c.name = which;
  if (which == "resnet50") {
    c.sizes = resnet50_parameter_sizes();
  } else {
    const auto x = which.find('x');
    std::optional<uint64_t> bytes;
    int count = 0;
    if (x != std::string::npos) {
      bytes = parse_size(which.substr(x + 1));
      count = std::atoi(which.substr(0, x).c_str());
    }
    if (!bytes || count <= 0 || *bytes < 4 || count > 100000) {
      std::fprintf(stderr,
                   "tutti-bench engine: --case '%s' is not TxS (e.g. 256x16K) or resnet50\n",
                   which.c_str());
      return 2;
    }
    c.sizes.assign(static_cast<size_t>(count), *bytes / 4);
  }
  World world;
  Communicator& comm = world.communicator();
  const size_t total = std::accumulate(c.sizes.begin(), c.sizes.end(), size_t{0});
  std::vector<float> flat(total, 1.0f);
  std::vector<float*> tensors;
  for (size_t at = 0, i = 0; i < c.sizes.size(); at += c.sizes[i], ++i)
    tensors.push_back(flat.data() + at);
  std::vector<std::string> names;
  for (size_t i = 0; i < c.sizes.size(); ++i) names.push_back(fmt::format("grad.{}", i));
  const size_t n = c.sizes.size();

  const auto per_tensor = [&] {
    for (size_t i = n; i-- > 0;)
      comm.allreduce(tensors[i], tensors[i], c.sizes[i], DataType::kFloat32, ReduceOp::kSum);
  };
  std::vector<Handle> handles(n);
  const bool forward = order == "forward";
  const auto engine = [&] {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = forward ? k : n - 1 - k;
      handles[i] = comm.allreduce_async(names[i], tensors[i], tensors[i], c.sizes[i],
                                        DataType::kFloat32, ReduceOp::kSum);
    }
    for (auto& h : handles) h.wait();
  };
  const auto one_buffer = [&] {
    comm.allreduce(flat.data(), flat.data(), total, DataType::kFloat32, ReduceOp::kSum);
  };
  // (d): the cycle's cache-bit exchange (one word of flags and 1024 slots' bits, the default
  // TUTTI_CACHE_CAPACITY: 17 int64) before the flat call. Any engine that negotiates once a step
  // pays at least this round trip, so (d) bounds (b) from above more tightly than (c).
  std::vector<int64_t> bits(17, -1);
  const auto negotiated_buffer = [&] {
    comm.allreduce(bits.data(), bits.data(), bits.size(), DataType::kInt64, ReduceOp::kBand);
    one_buffer();
  };
  // Warm up each (the engine's first steps fill its response cache).
  const bool run_a = modes.find('a') != std::string::npos;
  const bool run_b = modes.find('b') != std::string::npos;
  const bool run_c = modes.find('c') != std::string::npos;
  const bool run_d = modes.find('d') != std::string::npos;
  const auto nothing = [] {};
  if (run_a) timed(comm, 2, per_tensor);
  if (run_b) timed(comm, 3, engine);
  if (run_c) timed(comm, 2, one_buffer);
  if (run_d) timed(comm, 2, negotiated_buffer);
  std::vector<double> a, b, cc, d, b_over_a, b_over_c, b_over_d, d_over_c, b_cpu, b_minus_c_cpu,
      b_switches, c_switches;
  for (int r = 0; r < rounds; ++r) {
    double cpu_b = 0;
    double cpu_c = 0;
    double switches_b = 0;
    double switches_c = 0;
    const double ta = run_a ? timed(comm, steps, per_tensor) : timed(comm, 1, nothing);
    const double tb =
        run_b ? timed(comm, steps, engine, &cpu_b, &switches_b) : timed(comm, 1, nothing);
    const double tc =
        run_c ? timed(comm, steps, one_buffer, &cpu_c, &switches_c) : timed(comm, 1, nothing);
    const double td = run_d ? timed(comm, steps, negotiated_buffer) : timed(comm, 1, nothing);
    // Per tensor, in microseconds: the whole step's CPU, and what it costs beyond moving the same
    // bytes in one call (c).
    b_cpu.push_back(cpu_b * 1e6 / static_cast<double>(n));
    b_minus_c_cpu.push_back((cpu_b - cpu_c) * 1e6 / static_cast<double>(n));
    b_switches.push_back(switches_b);
    c_switches.push_back(switches_c);
    a.push_back(1 / ta);
    b.push_back(1 / tb);
    cc.push_back(1 / tc);
    b_over_a.push_back(ta / tb);
    b_over_c.push_back(tc / tb);
    d.push_back(1 / td);
    b_over_d.push_back(td / tb);
    d_over_c.push_back(tc / td);
  }
  const EngineStats s = comm.engine_stats();
  if (comm.rank() == 0) {
    std::printf(
        "# tutti-bench engine: case %s (%zu float32 tensors, %.1f MiB), %d ranks, %d steps x "
        "%d rounds, medians, (b) enqueues %s\n",
        c.name.c_str(), n, static_cast<double>(total) * 4 / (1 << 20), comm.size(), steps, rounds,
        order.c_str());
    std::printf("# %-28s %12s\n", "mode", "steps/s");
    // A mode left out by --modes shows "-", and so does a ratio that needs it.
    const auto rate = [](const char* label, bool ran, const std::vector<double>& v) {
      if (ran)
        std::printf("  %-28s %12.1f\n", label, median(v));
      else
        std::printf("  %-28s %12s\n", label, "-");
    };
    const auto ratio = [](bool ran, const std::vector<double>& v) {
      return ran ? fmt::format("{:.2f}x", median(v)) : std::string("-");
    };
    rate("(a) allreduce per tensor", run_a, a);
    rate("(b) engine", run_b, b);
    rate("(c) one flat allreduce", run_c, cc);
    if (run_d) rate("(d) 136 B allreduce + (c)", run_d, d);
    std::printf(
        "# (b)/(a) %s   (b)/(c) %s   engine: %llu tensors in %llu collectives, %llu "
        "cache hits, %llu cycles (%llu replayed)\n",
        ratio(run_a && run_b, b_over_a).c_str(), ratio(run_b && run_c, b_over_c).c_str(),
        static_cast<unsigned long long>(s.tensors), static_cast<unsigned long long>(s.collectives),
        static_cast<unsigned long long>(s.cache_hits), static_cast<unsigned long long>(s.cycles),
        static_cast<unsigned long long>(s.replayed));
    if (run_d)
      std::printf("# (b)/(d) %s   (d)/(c) %s\n", ratio(run_b && run_d, b_over_d).c_str(),
                  ratio(run_c && run_d, d_over_c).c_str());
    // The engine's own cost: CPU of all of a rank's threads (mean over ranks) per tensor of (b);
    // less (c)'s, what moving the same bytes in one call costs.
    if (run_b)
      std::printf(
          "# (b) CPU per tensor %.3f us%s\n", median(b_cpu),
          run_c ? fmt::format(", beyond (c) {:.3f} us", median(b_minus_c_cpu)).c_str() : "");
    // Context switches a rank takes per step (mean over ranks): with more ranks than cores, each
    // is a turn of the CPU, and (b) taking more than (c) shows its sleeps and wake-ups.
    if (run_b)
      std::printf("# context switches per step and rank: (b) %.1f%s\n", median(b_switches),
                  run_c ? fmt::format(", (c) {:.1f}", median(c_switches)).c_str() : "");
  }
  return 0;
}

}  // namespace tutti::bench
