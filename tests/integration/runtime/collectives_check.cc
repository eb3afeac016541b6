// collectives_check: runs every collective over a sweep of counts, dtypes, ops, in place and out of
// place, with inputs whose exact results are known, on however many ranks tuttirun started.
// Used by the integration tests; also a handy smoke test on a real cluster.
//
//   collectives_check [--counts 0,1,N-1,1000] [--dtypes all|every|float32,...]
//                     [--ops all|every|sum,...]
//                     [--collectives all|allreduce,allgather,reduce_scatter,broadcast,barrier]
//                     [--loop-seconds S] [--pid-dir DIR]
// "N-1" in --counts means world size minus one. --loop-seconds runs large allreduces in a loop for
// that long (failure tests kill a rank meanwhile); --pid-dir makes each rank write DIR/<rank>.pid.
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tutti/tutti.hpp"
#include "typed_values.hpp"

namespace {

using tutti::DataType;
using tutti::ReduceOp;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Element access for every dtype (float16/bfloat16 converted, integers wrapped): the one copy
// tutti-bench and the unit tests share.
void store(DataType t, void* buf, size_t i, double v) {
  tutti::values::set_value(t, buf, i, v);
}

double load(DataType t, const void* buf, size_t i) {
  return tutti::values::get_value(t, buf, i);
}

// Inputs chosen so every result is exact in every dtype for up to 8 ranks (sums <= 40, products <=
// 16, min/max include negatives only for signed types).
double input(ReduceOp op, DataType t, int rank, size_t i) {
  if (t == DataType::kBool) {
    // Mostly true for the and-like ops, mostly false for the or-like ones: both outcomes occur.
    const bool rare = (static_cast<size_t>(rank) * 5 + i * 3) % 7 == 0;
    const bool and_like = op == ReduceOp::kProd || op == ReduceOp::kMin || op == ReduceOp::kBand;
    return (and_like ? !rare : rare) ? 1 : 0;
  }
  switch (op) {
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return static_cast<double>((rank * 37 + i * 11) % 128);
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<double>((rank * 7 + i) % 5 + 1);
    case ReduceOp::kProd:
      return static_cast<double>((rank + i) % 2 + 1);
    case ReduceOp::kMin:
    case ReduceOp::kMax: {
      double v = static_cast<double>((rank * 3 + i * 5) % 11);
      return t == DataType::kUInt8 || t == DataType::kBool ? v : v - 5;
    }
  }
  return 0;
}

double expected(ReduceOp op, DataType t, int size, size_t i) {
  if (t == DataType::kBool) {
    return tutti::values::fold_ranks<bool>(op, size,
                                           [&](int r) { return input(op, t, r, i) != 0; });
  }
  // The runtime's reduction step, as the unit tests and tutti-bench check it (typed_values.hpp).
  double acc =
      tutti::values::fold_ranks<double>(op, size, [&](int r) { return input(op, t, r, i); });
  if (op == ReduceOp::kAvg) acc = tutti::is_floating(t) ? acc / size : std::trunc(acc / size);
  return acc;
}

bool close_enough(DataType t, ReduceOp op, double got, double want) {
  if (op != ReduceOp::kAvg || !tutti::is_floating(t)) return got == want;
  double tol = (t == DataType::kFloat16 || t == DataType::kBFloat16) ? 1e-2 : 1e-6;
  return std::fabs(got - want) <= tol * std::fabs(want);
}

struct Checker {
  tutti::Communicator& comm;
  long checks = 0;
  long failures = 0;

  void report(const std::string& what, size_t wrong, size_t first, double got, double want) {
    ++checks;
    if (wrong == 0) return;
    ++failures;
    fmt::print(stderr, "rank {}: {}: {} wrong elements (first at {}: got {} expected {})\n",
               comm.rank(), what, wrong, first, got, want);
  }

  void allreduce(size_t count, DataType t, ReduceOp op, bool in_place) {
    const size_t es = tutti::element_size(t);
    std::vector<std::byte> send(count * es), recv(count * es);
    for (size_t i = 0; i < count; ++i) store(t, send.data(), i, input(op, t, comm.rank(), i));
    void* out = in_place ? send.data() : recv.data();
    comm.allreduce(send.data(), out, count, t, op);
    size_t wrong = 0, first = 0;
    double got = 0, want = 0;
    for (size_t i = 0; i < count; ++i) {
      double g = load(t, out, i), w = expected(op, t, comm.size(), i);
      if (!close_enough(t, op, g, w) && wrong++ == 0) first = i, got = g, want = w;
    }
    report(fmt::format("allreduce {} {} count {} {}", tutti::to_string(t), tutti::to_string(op),
                       count, in_place ? "in-place" : "out-of-place"),
           wrong, first, got, want);
  }

  void reduce_scatter(size_t count, DataType t, ReduceOp op, bool in_place) {
    const size_t es = tutti::element_size(t);
    const size_t n = comm.size();
    std::vector<std::byte> send(count * n * es), recv(count * es);
    for (size_t i = 0; i < count * n; ++i) store(t, send.data(), i, input(op, t, comm.rank(), i));
    // In place for reduce_scatter: the result lands in this rank's block of the send buffer.
    void* out = in_place ? send.data() + comm.rank() * count * es : recv.data();
    comm.reduce_scatter(send.data(), out, count, t, op);
    size_t wrong = 0, first = 0;
    double got = 0, want = 0;
    for (size_t i = 0; i < count; ++i) {
      double g = load(t, out, i), w = expected(op, t, comm.size(), comm.rank() * count + i);
      if (!close_enough(t, op, g, w) && wrong++ == 0) first = i, got = g, want = w;
    }
    report(fmt::format("reduce_scatter {} {} count {} {}", tutti::to_string(t),
                       tutti::to_string(op), count, in_place ? "in-place" : "out-of-place"),
           wrong, first, got, want);
  }

  // Values that every type holds exactly (bool: their parity).
  DataType gather_type = DataType::kFloat32;
  double gather_value(int rank, size_t i) const {
    const double v = static_cast<double>((rank * 13 + i) % 100);
    return gather_type == DataType::kBool ? static_cast<double>(static_cast<int64_t>(v) % 2) : v;
  }

  void allgather(size_t count, DataType t, bool in_place) {
    gather_type = t;
    const size_t es = tutti::element_size(t);
    const size_t n = comm.size();
    std::vector<std::byte> send(count * es), recv(count * n * es);
    std::byte* mine = in_place ? recv.data() + comm.rank() * count * es : send.data();
    for (size_t i = 0; i < count; ++i) store(t, mine, i, gather_value(comm.rank(), i));
    comm.allgather(mine, recv.data(), count, t);
    size_t wrong = 0, first = 0;
    double got = 0, want = 0;
    for (size_t r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        double g = load(t, recv.data(), r * count + i), w = gather_value(static_cast<int>(r), i);
        if (g != w && wrong++ == 0) first = r * count + i, got = g, want = w;
      }
    report(fmt::format("allgather {} count {} {}", tutti::to_string(t), count,
                       in_place ? "in-place" : "out-of-place"),
           wrong, first, got, want);
  }

  void broadcast(size_t count, DataType t, int root) {
    gather_type = t;
    const size_t es = tutti::element_size(t);
    std::vector<std::byte> buf(count * es);
    for (size_t i = 0; i < count; ++i)
      store(t, buf.data(), i,
            comm.rank() == root ? gather_value(root, i) : gather_value(root + 1, i));
    comm.broadcast(buf.data(), count, t, root);
    size_t wrong = 0, first = 0;
    double got = 0, want = 0;
    for (size_t i = 0; i < count; ++i) {
      double g = load(t, buf.data(), i), w = gather_value(root, i);
      if (g != w && wrong++ == 0) first = i, got = g, want = w;
    }
    report(fmt::format("broadcast {} count {} root {}", tutti::to_string(t), count, root), wrong,
           first, got, want);
  }
};

// "all" is the first seven types and five ops (what the sweeps have always covered); "every" adds
// int8, int16, bool and the bitwise ops, which their own tests sweep. Pairs that tutti does not
// define (bitwise on floats, avg on bool) are skipped by the loops.
constexpr int kClassicTypes = 7, kClassicOps = 5;

std::vector<DataType> parse_dtypes(const std::string& s) {
  std::vector<DataType> out;
  for (int t = 0; t < tutti::kNumDataTypes; ++t) {
    auto dt = static_cast<DataType>(t);
    for (const auto& name : split(s))
      if ((name == "all" && t < kClassicTypes) || name == "every" || name == tutti::to_string(dt))
        out.push_back(dt);
  }
  return out;
}

std::vector<ReduceOp> parse_ops(const std::string& s) {
  std::vector<ReduceOp> out;
  for (int o = 0; o < tutti::kNumReduceOps; ++o) {
    auto op = static_cast<ReduceOp>(o);
    for (const auto& name : split(s))
      if ((name == "all" && o < kClassicOps) || name == "every" || name == tutti::to_string(op))
        out.push_back(op);
  }
  return out;
}

bool wants(const std::string& list, const std::string& name) {
  for (const auto& s : split(list))
    if (s == "all" || s == name) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string counts_arg = "0,1,N-1,1000", dtypes_arg = "all", ops_arg = "all",
              collectives_arg = "all", pid_dir;
  double loop_seconds = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "collectives_check: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--counts")
      counts_arg = value();
    else if (a == "--dtypes")
      dtypes_arg = value();
    else if (a == "--ops")
      ops_arg = value();
    else if (a == "--collectives")
      collectives_arg = value();
    else if (a == "--loop-seconds")
      loop_seconds = std::atof(value().c_str());
    else if (a == "--pid-dir")
      pid_dir = value();
    else {
      fmt::print(stderr, "collectives_check: unknown argument {}\n", a);
      return 2;
    }
  }

  try {
    tutti::World world;
    auto& comm = world.communicator();
    if (!pid_dir.empty())
      std::ofstream(fmt::format("{}/{}.pid", pid_dir, comm.rank())) << getpid() << "\n";

    if (loop_seconds > 0) {
      std::vector<float> data(4 << 20, 1.0f);
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(loop_seconds);
      long iterations = 0;
      // Every rank stops after the same iteration (the first whose time is up on any rank), so
      // that no rank is left waiting for a peer that has already left.
      std::array<int64_t, 1> time_up{0};
      while (time_up[0] == 0) {
        comm.allreduce(std::span<float>(data), ReduceOp::kMax);
        ++iterations;
        time_up[0] = std::chrono::steady_clock::now() >= end ? 1 : 0;
        comm.allreduce(std::span<int64_t>(time_up), ReduceOp::kMax);
      }
      fmt::print("rank {}: {} large allreduces done\n", comm.rank(), iterations);
      return 0;
    }

    std::vector<size_t> counts;
    for (const auto& c : split(counts_arg))
      counts.push_back(c == "N-1" ? static_cast<size_t>(comm.size() - 1)
                                  : std::strtoull(c.c_str(), nullptr, 10));
    auto dtypes = parse_dtypes(dtypes_arg);
    auto ops = parse_ops(ops_arg);

    Checker check{comm};
    for (size_t count : counts)
      for (DataType t : dtypes) {
        for (ReduceOp op : ops)
          for (bool in_place : {false, true}) {
            if (!tutti::supports(t, op)) continue;
            if (wants(collectives_arg, "allreduce")) check.allreduce(count, t, op, in_place);
            if (wants(collectives_arg, "reduce_scatter"))
              check.reduce_scatter(count, t, op, in_place);
          }
        if (wants(collectives_arg, "allgather"))
          for (bool in_place : {false, true}) check.allgather(count, t, in_place);
        if (wants(collectives_arg, "broadcast"))
          for (int root = 0; root < comm.size(); ++root) check.broadcast(count, t, root);
      }
    if (wants(collectives_arg, "barrier"))
      for (int i = 0; i < 3; ++i) comm.barrier();

    // Everyone learns whether anyone failed, so every rank exits with the same verdict.
    int64_t failures = check.failures;
    comm.allreduce(std::span<int64_t>(&failures, 1), ReduceOp::kSum);
    if (comm.rank() == 0)
      fmt::print("collectives_check: {} ranks, {} checks per rank, {} failed\n", comm.size(),
                 check.checks, failures);
    return failures == 0 ? 0 : 1;
  } catch (const tutti::Error& e) {
    fmt::print(stderr, "collectives_check: {}\n", e.what());
    return 1;
  }
}
