// tutti-bench: nccl-tests-style sweeps of one collective over sizes, dtypes and ops, through the
// public C++ API. Run it under tuttirun: tuttirun -np 4 tutti-bench allreduce -b 8 -e 64M -f 2
// With --baseline mpi (under mpirun) or --baseline gloo, a peer's allreduce is timed interleaved
// with tutti's on the same buffer, and a ratio column compares them.
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "bench_options.hpp"
#include "collective_runner.hpp"
#include "engine_bench.hpp"
#include "env_value.hpp"
#include "pair_stats.hpp"
#include "report.hpp"
#include "tune.hpp"
#include "tutti/tutti.hpp"

namespace tutti::bench {
namespace {

// Fixed-size record so one allgather tells rank 0 every rank's pid and host.
struct RankRecord {
  int64_t pid;
  char host[56];
};

std::vector<RankInfo> gather_ranks(Communicator& comm) {
  RankRecord mine{};
  mine.pid = ::getpid();
  ::gethostname(mine.host, sizeof mine.host - 1);
  std::vector<RankRecord> all(static_cast<size_t>(comm.size()));
  comm.allgather(&mine, all.data(), sizeof(RankRecord), DataType::kUInt8);
  std::vector<RankInfo> out;
  for (int r = 0; r < comm.size(); ++r) {
    const RankRecord& rec = all[static_cast<size_t>(r)];
    out.push_back(RankInfo{r, rec.pid, std::string(rec.host, strnlen(rec.host, sizeof rec.host))});
  }
  return out;
}

void print(const std::string& text);

// Distinct hosts as the runtime sees them: TUTTI_HOST where set, else the host name.
int count_hosts(Communicator& comm) {
  std::array<char, 64> mine{};
  if (auto host = env_value("TUTTI_HOST"))
    std::strncpy(mine.data(), host->c_str(), mine.size() - 1);
  else
    ::gethostname(mine.data(), mine.size() - 1);
  std::vector<std::array<char, 64>> all(static_cast<size_t>(comm.size()));
  comm.allgather(mine.data(), all.data(), mine.size(), DataType::kUInt8);
  std::set<std::string> distinct;
  for (const auto& h : all) distinct.emplace(h.data(), strnlen(h.data(), h.size()));
  return static_cast<int>(distinct.size());
}

std::string env_or(const char* name, const std::string& fallback) {
  return env_value(name).value_or(fallback);
}

// Rank 0 fits the in-place times and merges the line into the tuning file (tune.hpp).
int write_tune_line(const BenchOptions& o, const std::vector<TunePoint>& points, int ranks,
                    int hosts) {
  TuneLine key;
  key.algorithm = env_or("TUTTI_ALGO", "auto");
  key.ranks = ranks;
  key.hosts = hosts;
  key.transport = env_or("TUTTI_TRANSPORT", "auto");
  auto line = fit_tune_line(points, key);
  if (!line) {
    std::fprintf(stderr, "tutti-bench: --tune needs at least two sizes (-b < -e)\n");
    return 2;
  }
  std::string existing;
  if (std::ifstream in(o.tune_path); in) {
    std::stringstream text;
    text << in.rdbuf();
    existing = text.str();
  }
  std::string merged = merge_tune_file(existing, *line, points, o.tune_path);
  std::ofstream out(o.tune_path);
  out << merged;
  if (!out) {
    std::fprintf(stderr, "tutti-bench: cannot write --tune %s: %s\n", o.tune_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  print(
      fmt::format("# Tuned {} on {} ranks, {} host(s), TUTTI_TRANSPORT={}: alpha {:.2f} us, "
                  "beta {:.4f} ns/B -> {}\n",
                  line->algorithm, ranks, hosts, line->transport, line->alpha_us,
                  line->beta_ns_per_byte, o.tune_path));
  return 0;
}

double max_over_ranks(Communicator& comm, double v) {
  comm.allreduce(&v, &v, 1, DataType::kFloat64, ReduceOp::kMax);
  return v;
}

int64_t sum_over_ranks(Communicator& comm, int64_t v) {
  comm.allreduce(&v, &v, 1, DataType::kInt64, ReduceOp::kSum);
  return v;
}

// Seconds per call of `call`, n times after a barrier, as the slowest rank saw it.
template <typename Call>
double timed_block(Communicator& comm, int iters, Call&& call) {
  using Clock = std::chrono::steady_clock;
  comm.barrier();
  auto start = Clock::now();
  for (int i = 0; i < iters; ++i) call();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iters;
  return max_over_ranks(comm, seconds);
}

Measurement from_seconds(const RunSpec& spec, double seconds, int nranks) {
  Measurement m;
  m.time_us = seconds * 1e6;
  Bandwidth bw = bandwidth(spec.collective, spec.layout.param_count, spec.type, seconds, nranks);
  m.algbw = bw.alg;
  m.busbw = bw.bus;
  return m;
}

Measurement measure(Communicator& comm, CollectiveRunner& runner, const RunSpec& spec,
                    const BenchOptions& o) {
  runner.fill(spec);
  for (int i = 0; i < o.warmup_iters; ++i) runner.run(spec);
  Measurement m =
      from_seconds(spec, timed_block(comm, o.iters, [&] { runner.run(spec); }), comm.size());
  if (o.check) {
    // The timed runs left their results in the buffers (in place: fed back as inputs); start over.
    runner.fill(spec);
    runner.run(spec);
    m.wrong = sum_over_ranks(comm, static_cast<int64_t>(runner.count_wrong(spec)));
  }
  return m;
}

// tutti's allreduce (A) and the baseline's (B) on the same buffers, A B A B: one block of -n calls
// each per round; in place (spec.in_place) against the peer in place, else out of place against
// the peer out of place. Returns tutti's measurement; fills `base`.
Measurement measure_interleaved(Communicator& comm, CollectiveRunner& runner, Baseline& baseline,
                                const RunSpec& spec, const BenchOptions& o, BaselineResult& base) {
  const size_t count = spec.layout.param_count;
  auto ours = [&] { runner.run(spec); };
  auto theirs = [&] {
    if (spec.in_place)
      baseline.allreduce(runner.call_recv_ptr(spec), count, spec.type, spec.op);
    else
      baseline.allreduce_out_of_place(runner.call_send_ptr(spec), runner.call_recv_ptr(spec), count,
                                      spec.type, spec.op);
  };
  runner.fill(spec);
  if (spec.in_place) baseline.prepare(runner.call_recv_ptr(spec), count, spec.type, spec.op);
  for (int i = 0; i < o.warmup_iters; ++i) {
    ours();
    theirs();
  }
  std::vector<double> ours_s, base_s;
  for (int r = 0; r < o.rounds; ++r) {
    ours_s.push_back(timed_block(comm, o.iters, ours));
    base_s.push_back(timed_block(comm, o.iters, theirs));
  }
  PairSummary sum = summarize_pairs(ours_s, base_s);
  Measurement m = from_seconds(spec, sum.ours_seconds, comm.size());
  base.measurement = from_seconds(spec, sum.base_seconds, comm.size());
  base.ratio = sum.ratio;
  if (o.check) {
    runner.fill(spec);
    ours();
    m.wrong = sum_over_ranks(comm, static_cast<int64_t>(runner.count_wrong(spec)));
    if (spec.in_place || baseline.checks_out_of_place()) {
      runner.fill(spec);
      theirs();
      base.measurement.wrong = sum_over_ranks(comm, static_cast<int64_t>(runner.count_wrong(spec)));
    } else {
      base.measurement.wrong = -1;  // N/A: this peer's out-of-place call leaves no result
    }
  }
  return m;
}

nlohmann::json to_json(const Measurement& m) {
  nlohmann::json j = {{"time_us", m.time_us}, {"algbw_gbps", m.algbw}, {"busbw_gbps", m.busbw}};
  j["wrong"] = m.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(m.wrong);
  return j;
}

void print(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

// The rank's index among the ranks of its host, from whichever launcher started it, before
// tutti::init() (the GPU must be chosen before NCCL or tutti touch it).
int local_rank_from_env() {
  for (const char* name : {"TUTTI_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK",
                           "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (auto v = env_value(name)) {
      try {
        return std::max(std::stoi(*v), 0);
      } catch (const std::exception&) {
      }
    }
  }
  return 0;
}

int run_world(const BenchOptions& o, BaselineSession& session) {
  // One pair of buffers for the whole sweep: no size needs more than max_bytes on either side.
  const size_t buffer_bytes = (o.max_bytes + 7) / 8 * 8;
  std::unique_ptr<DeviceBuffers> device;
  if (o.device_cuda) device = make_device_buffers(buffer_bytes, local_rank_from_env());
  World world;
  std::unique_ptr<Baseline> baseline = session.connect(world.communicator());
  // The communicator timed: the world, or one made from it (--comm).
  Communicator comm = world.communicator();
  if (o.split_groups < 0) comm = comm.dup();
  if (o.split_groups > 0) comm = comm.split(comm.rank() % o.split_groups, comm.rank());
  // With --comm split:N every group sweeps; only the world's rank 0 reports.
  const int rank = world.communicator().rank() == 0 ? 0 : std::max(comm.rank(), 1);
  const int n = comm.size();
  if (is_rooted(o.collective) && o.root >= n) {
    if (rank == 0)
      std::fprintf(stderr, "tutti-bench: -r %d is not a rank of this %d-rank job\n", o.root, n);
    // The others wait until rank 0 has said why: a launcher that sees a rank exit first may stop
    // the rest before rank 0 prints.
    comm.barrier();
    return 2;
  }
  const std::string tune_algo = env_or("TUTTI_ALGO", "auto");
  if (!o.tune_path.empty() && (tune_algo == "auto" || tune_algo.empty())) {
    if (rank == 0)
      std::fprintf(stderr,
                   "tutti-bench: --tune fits one algorithm: run it with TUTTI_ALGO=ring, tree, hd, "
                   "shm or hier (bench/tune.sh runs them all)\n");
    comm.barrier();
    return 2;
  }
  const int hosts = o.tune_path.empty() ? 0 : count_hosts(comm);
  std::vector<TunePoint> tune_points;
  std::vector<RankInfo> ranks = gather_ranks(comm);
  const std::string baseline_label = baseline ? std::string(baseline_name(o.baseline)) : "";
  if (rank == 0) {
    std::string head = header_text(o, ranks);
    if (device)
      head +=
          fmt::format("# Buffers on the GPU (--device cuda), rank 0: {}\n", device->description());
    if (baseline)
      head += baseline_header_text(baseline_label, baseline->description(), o.rounds, o.iters);
    print(head + column_header_text(baseline_label));
  }

  std::vector<std::byte> send(buffer_bytes), recv(buffer_bytes);
  CollectiveRunner runner(comm, send, recv, device.get());

  const std::vector<uint64_t> sizes = sweep_sizes(o);
  int64_t total_wrong = 0;
  double busbw_sum = 0;
  int busbw_count = 0;
  nlohmann::json rows = nlohmann::json::array();
  std::string csv = csv_header_text();
  for (DataType type : o.types) {
    for (ReduceOp op : o.ops) {
      if (!supports(type, op)) {
        // -d all -o all asks for every pair; the ones a type does not define are skipped.
        if (rank == 0)
          print(
              fmt::format("# skipped {} {}: not defined on this type (bitwise ops take integer "
                          "and bool types; bool has no avg)\n",
                          type_name(type), op_name(op)));
        continue;
      }
      for (uint64_t size : sizes) {
        Layout layout = layout_for(o.collective, size / element_size(type), n);
        Row row;
        row.size_bytes = row_bytes(layout, type);
        row.count = layout.param_count;
        row.type = type;
        row.redop = is_reduction(o.collective) ? std::string(op_name(op)) : "none";
        row.root = is_rooted(o.collective) ? o.root : -1;
        RunSpec spec{o.collective, type, op, o.root, false, layout};
        if (baseline && o.baseline_out_of_place && baseline->supports(type, op)) {
          BaselineResult& base = row.baseline_out_of_place.emplace();
          row.out_of_place = measure_interleaved(comm, runner, *baseline, spec, o, base);
          total_wrong += std::max<int64_t>(base.measurement.wrong, 0);
        } else {
          if (baseline) row.baseline_out_of_place.emplace().supported = false;
          row.out_of_place = measure(comm, runner, spec, o);
        }
        spec.in_place = true;
        if (baseline) {
          BaselineResult& base = row.baseline.emplace();
          base.supported = baseline->supports(type, op);
          row.in_place = base.supported
                             ? measure_interleaved(comm, runner, *baseline, spec, o, base)
                             : measure(comm, runner, spec, o);
          if (base.supported) total_wrong += std::max<int64_t>(base.measurement.wrong, 0);
        } else {
          row.in_place = measure(comm, runner, spec, o);
        }
        if (type == o.types.front() && op == o.ops.front())
          tune_points.push_back({static_cast<double>(row.size_bytes), row.in_place.time_us * 1e-6});
        for (const Measurement* m : {&row.out_of_place, &row.in_place}) {
          total_wrong += std::max<int64_t>(m->wrong, 0);
          busbw_sum += m->busbw;
          ++busbw_count;
        }
        if (rank == 0) {
          print(row_text(row));
          nlohmann::json j = {{"size", row.size_bytes},
                              {"count", row.count},
                              {"type", type_name(type)},
                              {"redop", row.redop},
                              {"root", row.root},
                              {"out_of_place", to_json(row.out_of_place)},
                              {"in_place", to_json(row.in_place)}};
          if (row.baseline && row.baseline->supported) {
            j["baseline"] = to_json(row.baseline->measurement);
            j["ratio"] = row.baseline->ratio;
          }
          if (row.baseline_out_of_place && row.baseline_out_of_place->supported) {
            j["baseline_out_of_place"] = to_json(row.baseline_out_of_place->measurement);
            j["ratio_out_of_place"] = row.baseline_out_of_place->ratio;
          }
          rows.push_back(std::move(j));
          csv += csv_row_text(row, n, baseline_name(o.baseline));
        }
      }
    }
  }
  const double avg_busbw = busbw_count > 0 ? busbw_sum / busbw_count : 0;
  if (rank == 0) {
    print(footer_text(total_wrong, avg_busbw));
    if (!o.tune_path.empty()) {
      if (int rc = write_tune_line(o, tune_points, n, hosts); rc != 0) return rc;
    }
    if (!o.json_path.empty()) {
      nlohmann::json doc = {{"collective", collective_name(o.collective)},
                            {"nranks", n},
                            {"baseline", baseline_name(o.baseline)},
                            {"iters", o.iters},
                            {"warmup_iters", o.warmup_iters},
                            {"validation", o.check},
                            {"rows", rows},
                            {"out_of_bounds", total_wrong},
                            {"avg_busbw_gbps", avg_busbw}};
      std::ofstream out(o.json_path);
      out << doc.dump(2) << "\n";
      if (!out) {
        std::fprintf(stderr, "tutti-bench: cannot write --json %s: %s\n", o.json_path.c_str(),
                     std::strerror(errno));
        return 1;
      }
    }
    if (!o.csv_path.empty()) {
      std::ofstream out(o.csv_path);
      out << csv;
      if (!out) {
        std::fprintf(stderr, "tutti-bench: cannot write --csv %s: %s\n", o.csv_path.c_str(),
                     std::strerror(errno));
        return 1;
      }
    }
  }
  return total_wrong == 0 ? 0 : 1;
}

int run(const BenchOptions& o) {
  // Before tutti::init(): MPI_Init and the store address under mpirun (see baseline.hpp).
  std::unique_ptr<BaselineSession> session = start_baseline_session(o.baseline);
  try {
    return run_world(o, *session);
  } catch (const std::exception& e) {
    // Report, then let the peer take the job down: MPI_Finalize would wait for ranks that are
    // still inside a collective with this one.
    std::fprintf(stderr, "tutti-bench: %s\n", e.what());
    session->abort_job(1);
    return 1;
  }
}

}  // namespace
}  // namespace tutti::bench

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "engine") {
    try {
      return tutti::bench::run_engine_bench(std::span<const std::string>(args).subspan(1));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tutti-bench engine: %s\n", e.what());
      return 1;
    }
  }
  tutti::bench::BenchParse parsed = tutti::bench::parse_bench_options(args);
  if (!parsed.options) {
    std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  try {
    return tutti::bench::run(*parsed.options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-bench: %s\n", e.what());
    return 1;
  }
}
