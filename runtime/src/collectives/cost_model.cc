#include "collectives/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "collectives/allreduce_registry.hpp"
#include "collectives/broadcast_shape.hpp"
#include "collectives/shm_plan.hpp"
#include "collectives/tune_file.hpp"

namespace tutti::collectives {
namespace {

constexpr double kUs = 1e-6;
constexpr double kNsPerByte = 1e-9;

// Measured on the development machine (2 vCPUs, 2026-11-21/22; docs/PERFORMANCE.md, "Selection").
// shm: 8 B hd allreduce on 2 ranks over the framed shm channels took ~1.7 us for 2 messages;
//      large messages cross the byte ring in two copies plus the waits between them: the generic
//      ring over shm channels reached about Open MPI's 2.8 GB/s busbw at 64 MiB, ~4 GB/s per link.
// tcp: loopback ping-pong half round trip 4-8 us; ~9 GB/s one way raw, but the ring over TCP
//      reached ~2-3 GB/s busbw at 64 MiB (Gloo 2.6-3.1), so ~0.3 ns per byte per link.
// window: a flag round trip through the LocalWindow ~0.3 us; a copy into shared memory ~20 GB/s.
// reduce: c = a + b ~14 GB/s.
constexpr LinkCost kShm{0.8 * kUs, 0.25 * kNsPerByte};
constexpr LinkCost kTcp{6.0 * kUs, 0.30 * kNsPerByte};
constexpr LinkCost kWindow{0.3 * kUs, 0.05 * kNsPerByte};
constexpr double kReduce = 0.07 * kNsPerByte;
constexpr size_t kTableSizes[] = {8,       64,      512,      4 << 10,  32 << 10, 256 << 10,
                                  1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};

const LinkCost& link_cost(const CostModel& m, Link link) {
  return link == Link::kTcp ? m.tcp : m.shm;
}

// A link as priced on this placement: a TCP link's message and byte costs are CPU work (the
// kernel's copies through the socket and the veth or NIC path, the receiver's wake-up), so where
// `share` ranks run on each CPU at once each costs that many times more. Between pods of one
// 2-vCPU machine the fitted per-byte cost of a flat ring was 3.6 ns at 4 ranks per CPU and 8.8 ns
// at 8, against 0.3 ns here (docs/PERFORMANCE.md, "Scale across pods"). Shared-memory links are
// left as measured: spinning ranks, not the kernel, pay there, and no oversubscribed measurement
// says by how much.
LinkCost link_on(const CostModel& m, Link link, double share) {
  LinkCost l = link_cost(m, link);
  if (link == Link::kTcp && share > 1) {
    l.alpha_s *= share;
    l.beta_s_per_byte *= share;
  }
  return l;
}

double log2_ceil(int n) {
  return std::ceil(std::log2(static_cast<double>(std::max(n, 1))));
}

// Reduce-scatter then allgather around the ring: 2(n-1) sequential steps, each moving N/n bytes;
// within a step segments overlap receiving with reducing, so the reduce half costs the slower of
// moving and reducing.
double ring_time(const CostModel& m, double n, double bytes, const LinkCost& l) {
  const double share = (n - 1) / n * bytes;
  return 2 * (n - 1) * l.alpha_s + share * std::max(l.beta_s_per_byte, m.reduce_s_per_byte) +
         share * l.beta_s_per_byte;
}

// The largest power of two p <= n: the ranks that halving-doubling's rounds run on.
int power_of_two_below(int n) {
  return 1 << static_cast<int>(std::floor(std::log2(static_cast<double>(std::max(n, 1)))));
}

// The fold of the n - p extra ranks into a partner, and the result back to them.
double fold_time(const CostModel& m, int n, double bytes, const LinkCost& l) {
  if (n == power_of_two_below(n)) return 0;
  return 2 * l.alpha_s + 2 * bytes * l.beta_s_per_byte + bytes * m.reduce_s_per_byte;
}

// Recursive halving-doubling: 2 log2(p) steps, whole halves per step (no pipelining: moving and
// reducing add up); the n - p extra ranks fold their input into a partner first and get the
// result back at the end.
double halving_time(const CostModel& m, int n, double bytes, const LinkCost& l) {
  const int p = power_of_two_below(n);
  const double share = (p - 1.0) / p * bytes;
  return 2 * std::log2(static_cast<double>(p)) * l.alpha_s + 2 * share * l.beta_s_per_byte +
         share * m.reduce_s_per_byte + fold_time(m, n, bytes, l);
}

// Recursive doubling: log2(p) rounds, each moving and reducing the whole vector.
double doubling_time(const CostModel& m, int n, double bytes, const LinkCost& l) {
  const double rounds = std::log2(static_cast<double>(power_of_two_below(n)));
  return rounds * (l.alpha_s + bytes * l.beta_s_per_byte + bytes * m.reduce_s_per_byte) +
         fold_time(m, n, bytes, l);
}

// Halving-doubling priced by its halving variant: an upper bound, since the algorithm exchanges
// whole vectors instead where recursive_doubling_pays says so. Pricing that variant here too
// would make the 2 hosts x 2 placement pick hier at 8 B (19.6 us against hd's 24), which
// measured 56 us against hd's 36 between pods (docs/PERFORMANCE.md, "Scale across pods").
double hd_time(const CostModel& m, int n, double bytes, const LinkCost& l) {
  return halving_time(m, n, bytes, l);
}

// Double binary tree: depth d per tree, up then down, pipelined in segments; the busiest rank
// (interior in one tree, a leaf in the other) sends about 2 N and reduces N / 2.
double tree_time(const CostModel& m, int n, double bytes, const LinkCost& l) {
  const double depth = log2_ceil(n + 1);
  const double fill = std::min(bytes / 2, static_cast<double>(m.segment_bytes));
  return 2 * depth * (l.alpha_s + fill * l.beta_s_per_byte) + 2 * bytes * l.beta_s_per_byte +
         0.5 * bytes * m.reduce_s_per_byte;
}

// The LocalWindow algorithm: each chunk is staged (a copy of this rank's part), reduced slice-wise
// from all ranks' staged copies, and copied out, with two flag rounds per chunk. Messages up to
// kSingleStepBytes take one step; a chunk holds about one kSliceTargetBytes slice per rank
// (shm_plan.hpp; the model leaves out plan_shm's clamp of the chunk to 128-512 KiB).
double window_time(const CostModel& m, int n, double bytes) {
  const double chunks = bytes <= static_cast<double>(kSingleStepBytes)
                            ? 1
                            : std::ceil(bytes / (static_cast<double>(kSliceTargetBytes) * n));
  const double others = (n - 1.0) / n * bytes;
  return 2 * chunks * m.window.alpha_s + bytes * m.window.beta_s_per_byte +
         others * m.reduce_s_per_byte + others * m.window.beta_s_per_byte;
}

const TunedLine* tuned_line(const CostModel& m, Algorithm a, const Placement& p) {
  for (const TunedLine& t : m.tuned)
    if (t.algorithm == a && t.ranks == p.ranks && t.hosts == p.hosts && t.transport == p.transport)
      return &t;
  return nullptr;
}

// Chain reduce onto the host's leader, the leaders' best flat allreduce, broadcast on the host.
double hierarchical_time(const CostModel& m, double bytes, const Placement& p) {
  const LinkCost l = link_on(m, p.local, p.cpu_share);
  const double local = p.max_local;
  const double fill = std::min(bytes, static_cast<double>(m.segment_bytes));
  double t = 0;
  if (p.max_local > 1) {
    t += (local - 1) * (l.alpha_s + fill * l.beta_s_per_byte) +
         bytes * std::max(l.beta_s_per_byte, m.reduce_s_per_byte);
    if (binomial_broadcast(static_cast<size_t>(bytes), p.max_local))
      t += log2_ceil(p.max_local) * (l.alpha_s + bytes * l.beta_s_per_byte);
    else
      t += (local - 1) * (l.alpha_s + fill * l.beta_s_per_byte) + bytes * l.beta_s_per_byte;
  }
  // The hand-offs between phases (on-host reduce -> leaders, leaders -> on-host broadcast, and
  // the chain's own first step): the ranks waiting for them have been idle and must be woken,
  // which costs about a flat-link message each. Three, not two: 4 ranks in 2 pods of one 2-vCPU
  // machine (2 ranks per CPU) measured hier at 56 us against hd's 36 at 8 B, and on 2 pretend
  // hosts x 2 ranks at 2-3x hd's time, which the model meets only from three on
  // (docs/PERFORMANCE.md, "Hierarchical allreduce" and "Scale across pods").
  t += 3 * link_on(m, p.flat, p.cpu_share).alpha_s;
  if (p.hosts > 1) {
    Placement leaders = p;
    leaders.ranks = p.hosts;
    leaders.max_local = 1;
    leaders.window = false;
    leaders.cpu_share = p.leaders_cpu_share;
    double best = std::numeric_limits<double>::infinity();
    for (const AllreduceAlgorithm& a : allreduce_algorithms())
      if (a.between_leaders)
        best = std::min(best, predict(m, a.id, static_cast<size_t>(bytes), leaders));
    t += best;
  }
  return t;
}

}  // namespace

namespace model {

double ring(const CostModel& m, double bytes, const Placement& p) {
  return ring_time(m, p.ranks, bytes, link_on(m, p.flat, p.cpu_share));
}

double tree(const CostModel& m, double bytes, const Placement& p) {
  return tree_time(m, p.ranks, bytes, link_on(m, p.flat, p.cpu_share));
}

double halving_doubling(const CostModel& m, double bytes, const Placement& p) {
  return hd_time(m, p.ranks, bytes, link_on(m, p.flat, p.cpu_share));
}

double window(const CostModel& m, double bytes, const Placement& p) {
  return window_time(m, p.ranks, bytes);
}

double hierarchical(const CostModel& m, double bytes, const Placement& p) {
  return hierarchical_time(m, bytes, p);
}

}  // namespace model

std::string_view to_string(Link link) {
  return link == Link::kTcp ? "tcp" : "shm";
}

CostModel CostModel::defaults() {
  CostModel m;
  m.shm = kShm;
  m.tcp = kTcp;
  m.window = kWindow;
  m.reduce_s_per_byte = kReduce;
  return m;
}

CostModel CostModel::configured(size_t segment_bytes, const std::string& tune_file) {
  CostModel m = defaults();
  m.segment_bytes = segment_bytes;
  if (!tune_file.empty()) {
    m.tuned = read_tune_file(tune_file);
    m.tuned_from = tune_file;
  }
  return m;
}

std::vector<Algorithm> candidates(const Placement& p) {
  if (p.ranks <= 1) return {Algorithm::kRing};
  std::vector<Algorithm> out;
  for (const AllreduceAlgorithm& a : allreduce_algorithms())
    if (a.applies(p)) out.push_back(a.id);
  return out;
}

double predict(const CostModel& model, Algorithm algorithm, size_t bytes, const Placement& p) {
  if (const TunedLine* t = tuned_line(model, algorithm, p))
    return t->alpha_s + static_cast<double>(bytes) * t->beta_s_per_byte;
  const AllreduceAlgorithm* a = find_allreduce(algorithm);
  return a != nullptr ? a->model_time(model, static_cast<double>(bytes), p)
                      : std::numeric_limits<double>::infinity();
}

bool recursive_doubling_pays(const CostModel& model, size_t count, size_t element_bytes,
                             const Placement& p) {
  // Fewer elements than the p ranks of the power-of-two part leave blocks empty, and halving
  // skips their messages: it becomes a binomial reduce and broadcast, 2 (p - 1) messages against
  // doubling's p log2(p). Where ranks outnumber cores, messages cost more than rounds: 8 B at 8
  // ranks between pods took 142-178 us halving, 345-465 us doubling.
  if (count < static_cast<size_t>(power_of_two_below(p.ranks))) return false;
  const LinkCost l = link_on(model, p.flat, p.cpu_share);
  const double b = static_cast<double>(count * element_bytes);
  return doubling_time(model, p.ranks, b, l) < halving_time(model, p.ranks, b, l);
}

Algorithm cheapest(const CostModel& model, size_t bytes, const Placement& p) {
  Algorithm best = Algorithm::kRing;
  double best_time = std::numeric_limits<double>::infinity();
  for (Algorithm a : candidates(p)) {
    const double t = predict(model, a, bytes, p);
    if (t < best_time) {
      best = a;
      best_time = t;
    }
  }
  return best;
}

std::string decision_table(const CostModel& model, const Placement& p) {
  const std::vector<Algorithm> algos = candidates(p);
  std::string out = fmt::format(
      "allreduce decision table: {} ranks on {} host(s), at most {} per host, flat link {}, local "
      "link {}, window {}, TUTTI_TRANSPORT={}, ranks per CPU {:.2g} (leaders {:.2g}); {}; "
      "predicted us\n",
      p.ranks, p.hosts, p.max_local, to_string(p.flat), to_string(p.local), p.window ? "yes" : "no",
      p.transport, p.cpu_share, p.leaders_cpu_share,
      model.tuned_from.empty() ? "built-in constants"
                               : fmt::format("tuned lines from {}", model.tuned_from));
  out += fmt::format("{:>10}", "bytes");
  for (Algorithm a : algos) out += fmt::format(" {:>12}", to_string(a));
  out += fmt::format(" {:>6}\n", "pick");
  for (size_t bytes : kTableSizes) {
    out += fmt::format("{:>10}", bytes);
    for (Algorithm a : algos) {
      const bool tuned = tuned_line(model, a, p) != nullptr;
      out += fmt::format(" {:>11.1f}{}", predict(model, a, bytes, p) / kUs, tuned ? "*" : " ");
    }
    out += fmt::format(" {:>6}\n", to_string(cheapest(model, bytes, p)));
  }
  return out;
}

}  // namespace tutti::collectives
