// collective_set_check: the collectives beyond allreduce/broadcast/allgather/reduce_scatter
// (reduce, gather(v), scatter(v), allgatherv, reduce_scatterv, alltoall(v)) and allreduce's
// prescale/postscale through every algorithm ("scaled"), on however many ranks
// tuttirun started, with inputs whose results are known exactly; then the misuse cases (counts
// that disagree, ops a type does not have), which must fail with the right error and no hang.
//
//   collective_set_check [--counts 0,1,N-1,1001,100003] [--dtypes float32,int8,...]
//                        [--ops sum,band,...] [--collectives all|reduce,gather,...] [--misuse]
//
// The v-forms use per-rank counts derived from each count in --counts, with zeros for some ranks.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
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

bool wants(const std::string& list, const std::string& name) {
  for (const auto& s : split(list))
    if (s == "all" || s == name) return true;
  return false;
}

// Element access through double (the values used are small integers, exact in every type; bool
// gets 0 or 1): the one copy tutti-bench and the unit tests share.
void store(DataType t, void* buf, size_t i, double v) {
  tutti::values::set_value(t, buf, i, v);
}

double load(DataType t, const void* buf, size_t i) {
  return tutti::values::get_value(t, buf, i);
}

// Data-movement values: distinct per (rank, index), exact in every type.
double moved(DataType t, int rank, size_t i) {
  const auto v = static_cast<int>((static_cast<size_t>(rank) * 37 + i * 11) % 100);
  return t == DataType::kBool ? v % 2 : v;
}

// Reduction inputs with exact results for up to 8 ranks in every type (sums <= 40, products <= 16).
double input(DataType t, ReduceOp op, int rank, size_t i) {
  const auto r = static_cast<size_t>(rank);
  if (t == DataType::kBool) {
    const bool rare = (r * 5 + i * 3) % 7 == 0;
    const bool and_like = op == ReduceOp::kProd || op == ReduceOp::kMin || op == ReduceOp::kBand;
    return (and_like ? !rare : rare) ? 1 : 0;
  }
  switch (op) {
    case ReduceOp::kProd:
      return static_cast<double>((r + i) % 2 + 1);
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return static_cast<double>((r * 37 + i * 11) % 128);
    case ReduceOp::kMin:
    case ReduceOp::kMax: {
      const auto v = static_cast<double>((r * 3 + i * 5) % 11);
      return t == DataType::kUInt8 ? v : v - 5;
    }
    default:
      return static_cast<double>((r * 7 + i) % 5 + 1);
  }
}

double expected(DataType t, ReduceOp op, int size, size_t i) {
  // The runtime's reduction step, as the unit tests and tutti-bench check it (typed_values.hpp);
  // bool's inputs are 0 or 1, reduced as logical ops.
  if (t == DataType::kBool)
    return tutti::values::fold_ranks<bool>(op, size,
                                           [&](int r) { return input(t, op, r, i) != 0; });
  double acc =
      tutti::values::fold_ranks<double>(op, size, [&](int r) { return input(t, op, r, i); });
  if (op == ReduceOp::kAvg) acc = tutti::is_floating(t) ? acc / size : std::trunc(acc / size);
  return acc;
}

bool close(DataType t, ReduceOp op, double got, double want) {
  if (op != ReduceOp::kAvg || !tutti::is_floating(t)) return got == want;
  const double tol = (t == DataType::kFloat16 || t == DataType::kBFloat16) ? 1e-2 : 1e-6;
  return std::fabs(got - want) <= tol * std::fabs(want);
}

// Per-rank counts for the v-forms: about `count` each, with zeros for every third rank (and all
// of them zero when count is 0).
std::vector<size_t> uneven(size_t count, int size) {
  std::vector<size_t> counts(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    counts[static_cast<size_t>(r)] = r % 3 == 1 ? 0 : count + static_cast<size_t>(r % 2);
  if (count == 0) std::fill(counts.begin(), counts.end(), 0);
  return counts;
}

std::vector<size_t> offsets(const std::vector<size_t>& counts) {
  std::vector<size_t> out(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), out.begin() + 1);
  return out;
}

class Checker {
 public:
  explicit Checker(tutti::Communicator& comm)
      : comm_(comm), rank_(comm.rank()), size_(comm.size()) {}

  long checks() const { return checks_; }
  long failures() const { return failures_; }

  void reduce(size_t count, DataType t, ReduceOp op, bool in_place) {
    for (int root = 0; root < size_; ++root) {
      auto send = buffer(count, t);
      for (size_t i = 0; i < count; ++i) store(t, send.data(), i, input(t, op, rank_, i));
      auto recv = buffer(count, t);
      std::byte* out = in_place && rank_ == root ? send.data() : recv.data();
      // Ranks other than the root pass no recv buffer at all.
      comm_.reduce(send.data(), rank_ == root ? out : nullptr, count, t, op, root);
      if (rank_ != root) continue;
      verify(
          fmt::format("reduce {} {} count {} root {}{}", to_string(t), to_string(op), count, root,
                      in_place ? " in place" : ""),
          count, [&](size_t i) { return std::pair(load(t, out, i), expected(t, op, size_, i)); },
          [&](double g, double w) { return close(t, op, g, w); });
    }
  }

  void gather(size_t count, DataType t, bool v) {
    const auto counts = v ? uneven(count, size_) : std::vector<size_t>(size_, count);
    const auto at = offsets(counts);
    for (int root = 0; root < size_; ++root) {
      auto send = buffer(counts[me()], t);
      for (size_t i = 0; i < counts[me()]; ++i) store(t, send.data(), i, moved(t, rank_, i));
      auto recv = buffer(at.back(), t);
      if (v)
        comm_.gatherv(send.data(), rank_ == root ? recv.data() : nullptr, counts, t, root);
      else
        comm_.gather(send.data(), rank_ == root ? recv.data() : nullptr, count, t, root);
      if (rank_ != root) continue;
      verify(fmt::format("gather{} {} count {} root {}", v ? "v" : "", to_string(t), count, root),
             at.back(),
             [&](size_t k) { return std::pair(load(t, recv.data(), k), from(t, at, k)); });
    }
  }

  void scatter(size_t count, DataType t, bool v) {
    const auto counts = v ? uneven(count, size_) : std::vector<size_t>(size_, count);
    const auto at = offsets(counts);
    for (int root = 0; root < size_; ++root) {
      auto send = buffer(rank_ == root ? at.back() : 0, t);
      if (rank_ == root)
        for (size_t k = 0; k < at.back(); ++k) store(t, send.data(), k, from(t, at, k));
      auto recv = buffer(counts[me()], t);
      const void* source = rank_ == root ? send.data() : nullptr;
      if (v)
        comm_.scatterv(source, recv.data(), counts, t, root);
      else
        comm_.scatter(source, recv.data(), count, t, root);
      verify(fmt::format("scatter{} {} count {} root {}", v ? "v" : "", to_string(t), count, root),
             counts[me()],
             [&](size_t i) { return std::pair(load(t, recv.data(), i), moved(t, rank_, i)); });
    }
  }

  void allgatherv(size_t count, DataType t, bool in_place) {
    const auto counts = uneven(count, size_);
    const auto at = offsets(counts);
    auto recv = buffer(at.back(), t);
    auto send = buffer(counts[me()], t);
    std::byte* mine = in_place ? recv.data() + at[me()] * tutti::element_size(t) : send.data();
    for (size_t i = 0; i < counts[me()]; ++i) store(t, mine, i, moved(t, rank_, i));
    comm_.allgatherv(mine, recv.data(), counts, t);
    verify(
        fmt::format("allgatherv {} count {}{}", to_string(t), count, in_place ? " in place" : ""),
        at.back(), [&](size_t k) { return std::pair(load(t, recv.data(), k), from(t, at, k)); });
  }

  void reduce_scatterv(size_t count, DataType t, ReduceOp op, bool in_place) {
    const auto counts = uneven(count, size_);
    const auto at = offsets(counts);
    auto send = buffer(at.back(), t);
    for (size_t k = 0; k < at.back(); ++k) store(t, send.data(), k, input(t, op, rank_, k));
    auto recv = buffer(counts[me()], t);
    std::byte* out = in_place ? send.data() + at[me()] * tutti::element_size(t) : recv.data();
    comm_.reduce_scatterv(send.data(), out, counts, t, op);
    verify(
        fmt::format("reduce_scatterv {} {} count {}{}", to_string(t), to_string(op), count,
                    in_place ? " in place" : ""),
        counts[me()],
        [&](size_t i) { return std::pair(load(t, out, i), expected(t, op, size_, at[me()] + i)); },
        [&](double g, double w) { return close(t, op, g, w); });
  }

  void alltoall(size_t count, DataType t, bool v) {
    // Rank p sends rank q block_count(p, q) elements; what q receives from p is that count.
    auto block_count = [&](int from_rank, int to_rank) -> size_t {
      if (!v) return count;
      return (from_rank + 2 * to_rank) % 3 == 0 ? 0 : count + static_cast<size_t>(to_rank % 2);
    };
    std::vector<size_t> send_counts(size_), recv_counts(size_);
    for (int p = 0; p < size_; ++p) {
      send_counts[static_cast<size_t>(p)] = block_count(rank_, p);
      recv_counts[static_cast<size_t>(p)] = block_count(p, rank_);
    }
    const auto send_at = offsets(send_counts), recv_at = offsets(recv_counts);
    // Element i of the block from p to q: moved(p * size + q, i).
    auto send = buffer(send_at.back(), t);
    for (int q = 0; q < size_; ++q)
      for (size_t i = 0; i < send_counts[static_cast<size_t>(q)]; ++i)
        store(t, send.data(), send_at[static_cast<size_t>(q)] + i, moved(t, rank_ * size_ + q, i));
    auto recv = buffer(recv_at.back(), t);
    if (v)
      comm_.alltoallv(send.data(), send_counts, recv.data(), recv_counts, t);
    else
      comm_.alltoall(send.data(), recv.data(), count, t);
    verify(fmt::format("alltoall{} {} count {}", v ? "v" : "", to_string(t), count), recv_at.back(),
           [&](size_t k) {
             size_t p = 0;
             while (k >= recv_at[p + 1]) ++p;
             return std::pair(load(t, recv.data(), k),
                              moved(t, static_cast<int>(p) * size_ + rank_, k - recv_at[p]));
           });
  }

  // allreduce with prescale and postscale through every algorithm: inputs 1..5 times 0.5, the sum
  // times 0.25, all exact in binary; avg folds 1/size into the postscale.
  void scaled_allreduce(size_t count, DataType t, ReduceOp op) {
    const char* transport = std::getenv("TUTTI_TRANSPORT");
    const bool has_window = !(transport && std::string(transport) == "tcp");
    for (tutti::Algorithm algo :
         {tutti::Algorithm::kRing, tutti::Algorithm::kTree, tutti::Algorithm::kHalvingDoubling,
          tutti::Algorithm::kShm, tutti::Algorithm::kHierarchical, tutti::Algorithm::kAuto}) {
      if (algo == tutti::Algorithm::kShm && !has_window) continue;
      for (bool in_place : {false, true}) {
        auto send = buffer(count, t);
        for (size_t i = 0; i < count; ++i) store(t, send.data(), i, input(t, op, rank_, i));
        auto recv = buffer(count, t);
        std::byte* out = in_place ? send.data() : recv.data();
        tutti::CallOptions call;
        call.algorithm = algo;
        call.prescale = 0.5;
        call.postscale = 0.25;
        comm_.allreduce(send.data(), out, count, t, op, call);
        verify(
            fmt::format("scaled allreduce {} {} count {} algorithm {}{}", to_string(t),
                        to_string(op), count, static_cast<int>(algo), in_place ? " in place" : ""),
            count,
            [&](size_t i) { return std::pair(load(t, out, i), expected(t, op, size_, i) * 0.125); },
            [&](double g, double w) { return close(t, op, g, w); });
      }
    }
    // float16 partial sums that would overflow (3 x 40000 > 65504) unless the prescale is applied
    // to every input before the ring adds them.
    if (size_ == 3 && t == DataType::kFloat16 && op == ReduceOp::kSum && count > 0) {
      auto data = buffer(count, t);
      for (size_t i = 0; i < count; ++i) store(t, data.data(), i, 40000);
      tutti::CallOptions call;
      call.algorithm = tutti::Algorithm::kRing;
      call.prescale = 0.5;
      comm_.allreduce(data.data(), data.data(), count, t, op, call);
      verify("float16 prescale before the sum", count,
             [&](size_t i) { return std::pair(load(t, data.data(), i), 60000.0); });
    }
    // Integers and other ops refuse a scale (no message sent: the communicator stays usable).
    if (count > 0) {
      int32_t x = 1;
      tutti::CallOptions call;
      call.prescale = 2;
      ++checks_;
      try {
        comm_.allreduce(&x, &x, 1, DataType::kInt32, ReduceOp::kSum, call);
        ++failures_;
        fmt::print(stderr, "rank {}: prescale on int32 was not refused\n", rank_);
      } catch (const tutti::Error& e) {
        if (e.code() != tutti::ErrorCode::kInvalidArgument) ++failures_;
      }
    }
  }

  // Misuse: each case must fail with the expected code on the ranks that can tell, without a
  // hang; afterwards a fresh dup must work again (a failed call breaks its communicator only).
  void misuse() {
    // A bitwise op on floats is refused before anything is sent: the communicator stays usable.
    expect_error(
        "band on float32", tutti::ErrorCode::kInvalidArgument,
        [&](tutti::Communicator& c) {
          float x = 1;
          c.reduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kBand, 0);
        },
        /*every_rank=*/true, /*dup=*/false);
    if (size_ < 2) return;
    // Rank 0 believes in other counts than the rest.
    expect_error("allgatherv with disagreeing counts", tutti::ErrorCode::kMismatch,
                 [&](tutti::Communicator& c) {
                   std::vector<size_t> counts(size_, 3);
                   if (c.rank() == 0) counts[1] = 2;
                   std::vector<float> out(3 * size_), in(3);
                   c.allgatherv(in.data(), out.data(), counts, DataType::kFloat32);
                 });
    // Rank 1 expects more from rank 0 than rank 0 sends.
    expect_error("alltoallv with disagreeing sizes", tutti::ErrorCode::kMismatch,
                 [&](tutti::Communicator& c) {
                   std::vector<size_t> sc(size_, 2), rc(size_, 2);
                   if (c.rank() == 1) rc[0] = 3;
                   std::vector<int32_t> in(2 * size_), out(2 * size_ + 1);
                   c.alltoallv(in.data(), sc, out.data(), rc, DataType::kInt32);
                 });
    // Ranks disagree on the root of a gather.
    expect_error("gather with disagreeing roots", tutti::ErrorCode::kMismatch,
                 [&](tutti::Communicator& c) {
                   int32_t x = c.rank();
                   std::vector<int32_t> all(size_);
                   c.gather(&x, all.data(), 1, DataType::kInt32, c.rank() == 0 ? 0 : 1);
                 });
  }

 private:
  size_t me() const { return static_cast<size_t>(rank_); }

  static std::vector<std::byte> buffer(size_t count, DataType t) {
    // Poisoned, so an element nobody wrote shows up as wrong (0xee is odd, negative, or huge).
    return std::vector<std::byte>(std::max<size_t>(count, 1) * tutti::element_size(t),
                                  std::byte{0xee});
  }

  // Element k of the concatenation of every rank's moved() block, block r having at[r+1]-at[r].
  static double from(DataType t, const std::vector<size_t>& at, size_t k) {
    size_t r = 0;
    while (k >= at[r + 1]) ++r;
    return moved(t, static_cast<int>(r), k - at[r]);
  }

  template <typename GotWant, typename Same = std::equal_to<double>>
  void verify(const std::string& what, size_t n, GotWant got_want, Same same = {}) {
    ++checks_;
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      const auto [got, want] = got_want(i);
      if (!same(got, want) && wrong++ == 0)
        fmt::print(stderr, "rank {}: {}: element {} is {}, expected {}\n", rank_, what, i, got,
                   want);
    }
    if (wrong > 0) {
      ++failures_;
      fmt::print(stderr, "rank {}: {}: {} of {} elements wrong\n", rank_, what, wrong, n);
    }
  }

  template <typename Call>
  void expect_error(const std::string& what, tutti::ErrorCode code, Call call,
                    bool every_rank = false, bool dup = true) {
    ++checks_;
    tutti::Communicator c = dup ? comm_.dup() : comm_;
    int32_t caught = 0;
    try {
      call(c);
      // A rank that saw nothing wrong (its messages all matched) may return; the others fail.
      if (every_rank) {
        ++failures_;
        fmt::print(stderr, "rank {}: {}: no error\n", rank_, what);
      }
    } catch (const tutti::Error& e) {
      caught = 1;
      if (e.code() != code) {
        ++failures_;
        fmt::print(stderr, "rank {}: {}: code {} ({}), expected {}\n", rank_, what,
                   static_cast<int>(e.code()), e.what(), static_cast<int>(code));
      }
    }
    // Some rank must have found out (on the world: c may be broken now).
    comm_.allreduce(std::span<int32_t>(&caught, 1), ReduceOp::kMax);
    if (caught == 0) {
      ++failures_;
      fmt::print(stderr, "rank {}: {}: no rank got an error\n", rank_, what);
    }
  }

  tutti::Communicator& comm_;
  int rank_;
  int size_;
  long checks_ = 0;
  long failures_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string counts_arg = "0,1,N-1,1001",
              dtypes_arg = "float32,float64,float16,bfloat16,int64,int8,int16,bool",
              ops_arg = "sum,prod,min,max,avg,band,bor,bxor", collectives_arg = "all";
  bool misuse = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "collective_set_check: {} needs a value\n", a);
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
    else if (a == "--misuse")
      misuse = true;
    else {
      fmt::print(stderr, "collective_set_check: unknown argument {}\n", a);
      return 2;
    }
  }
  try {
    tutti::World world;
    auto& comm = world.communicator();
    std::vector<size_t> counts;
    for (const auto& c : split(counts_arg))
      counts.push_back(c == "N-1" ? static_cast<size_t>(comm.size() - 1)
                                  : std::strtoull(c.c_str(), nullptr, 10));
    std::vector<DataType> types;
    for (int t = 0; t < tutti::kNumDataTypes; ++t)
      if (wants(dtypes_arg, std::string(to_string(static_cast<DataType>(t)))))
        types.push_back(static_cast<DataType>(t));
    std::vector<ReduceOp> ops;
    for (int o = 0; o < tutti::kNumReduceOps; ++o)
      if (wants(ops_arg, std::string(to_string(static_cast<ReduceOp>(o)))))
        ops.push_back(static_cast<ReduceOp>(o));

    Checker check(comm);
    for (size_t count : counts)
      for (DataType t : types) {
        for (ReduceOp op : ops) {
          if (!tutti::supports(t, op)) continue;
          if (wants(collectives_arg, "scaled") && tutti::is_floating(t) &&
              (op == ReduceOp::kSum || op == ReduceOp::kAvg))
            check.scaled_allreduce(count, t, op);
          for (bool in_place : {false, true}) {
            if (wants(collectives_arg, "reduce")) check.reduce(count, t, op, in_place);
            if (wants(collectives_arg, "reduce_scatterv"))
              check.reduce_scatterv(count, t, op, in_place);
          }
        }
        for (bool v : {false, true}) {
          if (wants(collectives_arg, "gather")) check.gather(count, t, v);
          if (wants(collectives_arg, "scatter")) check.scatter(count, t, v);
          if (wants(collectives_arg, "alltoall")) check.alltoall(count, t, v);
          if (wants(collectives_arg, "allgatherv")) check.allgatherv(count, t, v);
        }
      }
    if (misuse) check.misuse();

    int64_t failures = check.failures();
    comm.allreduce(std::span<int64_t>(&failures, 1), ReduceOp::kSum);
    if (comm.rank() == 0)
      fmt::print("collective_set_check: {} ranks, {} checks per rank, {} failed\n", comm.size(),
                 check.checks(), failures);
    return failures == 0 ? 0 : 1;
  } catch (const tutti::Error& e) {
    fmt::print(stderr, "collective_set_check: {}\n", e.what());
    return 1;
  }
}
