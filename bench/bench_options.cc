#include "bench_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>

#include "device/device_buffers.hpp"

namespace tutti::bench {
namespace {

// Short names -d also takes, besides tutti's own (tutti::to_string) and nccl-tests' (type_name).
struct TypeName {
  std::string_view name;
  DataType type;
};
constexpr std::array kTypeAliases = {
    TypeName{"f32", DataType::kFloat32}, TypeName{"f64", DataType::kFloat64},
    TypeName{"f16", DataType::kFloat16}, TypeName{"bf16", DataType::kBFloat16},
    TypeName{"int", DataType::kInt32},
};
// "all" is all of them, as nccl-tests users read it; the sweep skips the pairs a type does not
// define (bitwise ops on floating types, avg on bool), saying so.
constexpr std::array kAllTypes = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                  DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                                  DataType::kUInt8,    DataType::kInt8,    DataType::kInt16,
                                  DataType::kBool};
constexpr std::array kAllOps = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin,
                                ReduceOp::kAvg, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

BenchParse usage_error(const std::string& message) {
  return BenchParse{std::nullopt, 2,
                    fmt::format("tutti-bench: {}\nRun 'tutti-bench --help' for usage.\n", message)};
}

constexpr std::string_view kUsage =
    "tutti-bench: nccl-tests-style bandwidth sweeps over tutti's collectives.\n\n"
    "Usage: tuttirun -np N tutti-bench COLLECTIVE [flags]\n"
    "  COLLECTIVE: allreduce | allgather | broadcast | reduce_scatter | reduce | gather |\n"
    "              scatter | alltoall | sendrecv\n\n"
    "Flags (as in nccl-tests; sizes take K/M/G suffixes):\n"
    "  -b, --minbytes SIZE     smallest size (default 8)\n"
    "  -e, --maxbytes SIZE     largest size (default 32M)\n"
    "  -f, --stepfactor N      multiply the size by N each step (default 2)\n"
    "  -i, --stepbytes SIZE    add SIZE each step; used when -f is not given (default 1M)\n"
    "      --sizes LIST        exactly these sizes, e.g. 8,1M,64M (instead of -b -e -f -i)\n"
    "  -n, --iters N           timed iterations per size (default 20)\n"
    "  -w, --warmup_iters N    untimed iterations first (default 5)\n"
    "  -c, --check 0|1         verify results; #wrong counts mismatching elements (default 1)\n"
    "  -d, --datatype TYPE     float|double|half|bfloat16|int32|int64|uint8|int8|int16|bool\n"
    "                          (aliases float32, float64, float16, bf16, int), a comma list, or\n"
    "                          all: every type (default float)\n"
    "  -o, --op OP             sum|prod|min|max|avg|band|bor|bxor, a comma list, or all: every\n"
    "                          op (default sum); pairs a type does not define (bitwise ops on\n"
    "                          floating types, avg on bool) are skipped with a note\n"
    "  -r, --root N            root of broadcast, reduce, gather and scatter (default 0)\n"
    "                          sendrecv has no in-place form: both of its columns are out of "
    "place\n"
    "      --json FILE         also write the results as JSON (rank 0)\n"
    "      --csv FILE          also write the results as CSV, one row per size (rank 0)\n"
    "      --baseline PEER     allreduce only: also time PEER's allreduce on the same ranks and\n"
    "                          buffer, interleaved with tutti's in-place one, and add its time,\n"
    "                          busbw, #wrong and ratio = tutti busbw / PEER busbw (median of the\n"
    "                          per-round ratios). PEER: mpi (run under Open MPI's mpirun), gloo\n"
    "                          (Gloo ring_chunked over tcp on loopback; any launcher), nccl\n"
    "                          (plain ncclAllReduce on the same GPU buffers; with --device cuda)\n"
    "                          or inplace (tutti's own in-place allreduce: the out-of-place ratio\n"
    "                          is then tutti out of place / tutti in place)\n"
    "      --device WHERE      host (default) or cuda: the buffers live on GPU local_rank % GPUs\n"
    "                          (allreduce, allgather, broadcast, reduce_scatter; needs a build\n"
    "                          with TUTTI_WITH_CUDA and an NVIDIA GPU)\n"
    "      --rounds N          with --baseline: rounds of -n iterations per side (default 5)\n"
    "      --baseline-oop 0|1  with --baseline: 0 times the peer in place only, for a peer whose\n"
    "                          out-of-place form is too slow to wait for (default 1)\n"
    "      --comm KIND         the communicator to time: world (default), dup (a communicator of\n"
    "                          the same ranks made by dup), or split:N (rank % N, every group\n"
    "                          sweeping at once; rank 0's group is reported)\n"
    "      --tune FILE         allreduce only, with TUTTI_ALGO set: fit time = alpha + bytes*beta\n"
    "                          to the in-place times and merge the line into FILE, the tuning "
    "file\n"
    "                          the runtime reads from TUTTI_TUNE_FILE (bench/tune.sh: all "
    "algorithms)\n"
    "  -h, --help              this help\n\n"
    "Output columns follow nccl-tests: time is the average per iteration in microseconds, the\n"
    "slowest rank's; algbw = size / time; busbw = algbw * 2(n-1)/n (allreduce), (n-1)/n "
    "(allgather,\n"
    "reduce_scatter), 1 (broadcast). Exits 1 if any value was wrong.\n";

template <typename T>
std::optional<std::vector<T>> parse_list(const std::string& text, std::span<const T> all,
                                         std::optional<T> (*one)(const std::string&)) {
  if (lower(text) == "all") return std::vector<T>(all.begin(), all.end());
  std::vector<T> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    auto v = one(text.substr(start, comma - start));
    if (!v) return std::nullopt;
    out.push_back(*v);
    start = comma + 1;
  }
  return out;
}

// "mpi gloo", "mpi", ... or "none": what --baseline accepts in this build.
std::string built_baselines_text() {
  std::string out;
  for (BaselineKind k :
       {BaselineKind::kMpi, BaselineKind::kGloo, BaselineKind::kNccl, BaselineKind::kInPlace}) {
    if (!baseline_built(k)) continue;
    if (!out.empty()) out += ' ';
    out += baseline_name(k);
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kReduce:
      return "reduce";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

bool is_reduction(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

bool is_rooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}

std::optional<DataType> parse_type(const std::string& name) {
  std::string n = lower(name);
  for (DataType t : kAllTypes)
    if (to_string(t) == n || type_name(t) == n) return t;
  for (const auto& t : kTypeAliases)
    if (t.name == n) return t.type;
  return std::nullopt;
}

std::optional<ReduceOp> parse_op(const std::string& name) {
  std::string n = lower(name);
  for (ReduceOp op : kAllOps)
    if (op_name(op) == n) return op;
  return std::nullopt;
}

std::string_view type_name(DataType t) {
  // nccl-tests' names for the three types it names otherwise; the rest are tutti's own, so the
  // output keeps nccl-tests' format and every other name comes from tutti/types.hpp.
  switch (t) {
    case DataType::kFloat32:
      return "float";
    case DataType::kFloat64:
      return "double";
    case DataType::kFloat16:
      return "half";
    default:
      return to_string(t);
  }
}

std::string_view op_name(ReduceOp op) {
  return to_string(op);
}

std::optional<uint64_t> parse_size(const std::string& text) {
  std::string t = lower(text);
  if (!t.empty() && t.back() == 'b') t.pop_back();
  uint64_t scale = 1;
  if (!t.empty()) {
    switch (t.back()) {
      case 'k':
        scale = 1ull << 10;
        break;
      case 'm':
        scale = 1ull << 20;
        break;
      case 'g':
        scale = 1ull << 30;
        break;
      default:
        break;
    }
    if (scale != 1) t.pop_back();
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  if (value > (~0ull) / scale) return std::nullopt;
  return value * scale;
}

std::vector<uint64_t> sweep_sizes(const BenchOptions& o) {
  if (!o.sizes.empty()) return o.sizes;
  std::vector<uint64_t> sizes;
  for (uint64_t size = o.min_bytes; size <= o.max_bytes;) {
    sizes.push_back(size);
    uint64_t next = o.step_factor > 1 ? size * o.step_factor : size + o.step_bytes;
    if (next <= size) break;  // a zero minimum with a factor, or overflow
    size = next;
  }
  return sizes;
}

BenchParse parse_bench_options(std::span<const std::string> args) {
  if (args.empty())
    return usage_error(
        "no collective given; one of allreduce, allgather, broadcast, reduce_scatter, reduce, "
        "gather, scatter, alltoall, sendrecv");
  if (args[0] == "-h" || args[0] == "--help")
    return BenchParse{std::nullopt, 0, std::string(kUsage)};
  if (args[0] == "--version")
    return BenchParse{std::nullopt, 0,
                      fmt::format("tutti-bench (tutti) {}\nbaselines: {}\n", TUTTI_VERSION,
                                  built_baselines_text())};

  BenchOptions o;
  const std::string& name = args[0];
  if (name == "allreduce")
    o.collective = Collective::kAllreduce;
  else if (name == "allgather")
    o.collective = Collective::kAllgather;
  else if (name == "broadcast")
    o.collective = Collective::kBroadcast;
  else if (name == "reduce_scatter" || name == "reducescatter")
    o.collective = Collective::kReduceScatter;
  else if (name == "reduce")
    o.collective = Collective::kReduce;
  else if (name == "gather")
    o.collective = Collective::kGather;
  else if (name == "scatter")
    o.collective = Collective::kScatter;
  else if (name == "alltoall")
    o.collective = Collective::kAlltoall;
  else if (name == "sendrecv")
    o.collective = Collective::kSendRecv;
  else
    return usage_error(
        fmt::format("unknown collective '{}'; use allreduce, allgather, broadcast, "
                    "reduce_scatter, reduce, gather, scatter, alltoall or sendrecv",
                    name));

  std::string minb = "8", maxb = "32M", stepb = "1M", types = "float", ops = "sum";
  uint64_t factor = 2;
  int check = 1;
  bool help = false;
  CLI::App app{"tutti-bench", "tutti-bench"};
  app.set_help_flag();
  app.add_flag("-h,--help", help);
  app.add_option("-b,--minbytes", minb);
  app.add_option("-e,--maxbytes", maxb);
  app.add_option("-f,--stepfactor", factor);
  app.add_option("-i,--stepbytes", stepb);
  std::string size_list;
  app.add_option("--sizes", size_list);
  app.add_option("-n,--iters", o.iters);
  app.add_option("-w,--warmup_iters", o.warmup_iters);
  app.add_option("-c,--check", check);
  app.add_option("-d,--datatype", types);
  app.add_option("-o,--op", ops);
  app.add_option("-r,--root", o.root);
  app.add_option("--json", o.json_path);
  app.add_option("--csv", o.csv_path);
  std::string baseline = "none";
  app.add_option("--baseline", baseline);
  app.add_option("--rounds", o.rounds);
  int baseline_oop = 1;
  app.add_option("--baseline-oop", baseline_oop);
  app.add_option("--tune", o.tune_path);
  std::string comm_kind = "world";
  app.add_option("--comm", comm_kind);
  std::string device = "host";
  app.add_option("--device", device);
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (help) return BenchParse{std::nullopt, 0, std::string(kUsage)};

  auto min_bytes = parse_size(minb), max_bytes = parse_size(maxb), step_bytes = parse_size(stepb);
  if (!min_bytes)
    return usage_error(fmt::format("-b '{}' is not a size (examples: 8, 64K, 1M, 2G)", minb));
  if (!max_bytes)
    return usage_error(fmt::format("-e '{}' is not a size (examples: 8, 64K, 1M, 2G)", maxb));
  if (!step_bytes)
    return usage_error(fmt::format("-i '{}' is not a size (examples: 8, 64K, 1M, 2G)", stepb));
  o.min_bytes = *min_bytes;
  o.max_bytes = *max_bytes;
  o.step_bytes = *step_bytes;
  if (app.count("--sizes") > 0) {
    for (const char* flag : {"-b/--minbytes", "-e/--maxbytes", "-f/--stepfactor", "-i/--stepbytes"})
      if (app.count(std::string(std::strchr(flag, '/') + 1)) > 0)
        return usage_error(fmt::format("--sizes lists every size; leave out {}", flag));
    auto sizes = parse_list<uint64_t>(size_list, {}, &parse_size);  // "all" gives none
    if (!sizes || sizes->empty())
      return usage_error(fmt::format(
          "--sizes '{}': give a comma list of sizes, e.g. --sizes 8,1M,64M", size_list));
    o.sizes = std::move(*sizes);
    std::sort(o.sizes.begin(), o.sizes.end());
    o.sizes.erase(std::unique(o.sizes.begin(), o.sizes.end()), o.sizes.end());
    o.min_bytes = o.sizes.front();
    o.max_bytes = o.sizes.back();
  }
  if (o.min_bytes > o.max_bytes)
    return usage_error(fmt::format("-b {} is larger than -e {}", o.min_bytes, o.max_bytes));
  // nccl-tests: a factor > 1 wins; -i alone (no -f) makes the sweep linear.
  bool factor_given = app.count("--stepfactor") > 0;
  o.step_factor = factor_given ? factor : (app.count("--stepbytes") > 0 ? 1 : 2);
  if (o.step_factor < 1) return usage_error("-f must be 1 or more");
  if (o.step_factor == 1 && o.step_bytes == 0)
    return usage_error("-i 0 with -f 1 would never reach -e");
  if (o.iters < 1)
    return usage_error(fmt::format("-n {}: need at least 1 timed iteration", o.iters));
  if (o.warmup_iters < 0)
    return usage_error(fmt::format("-w {}: cannot be negative", o.warmup_iters));
  if (check != 0 && check != 1) return usage_error(fmt::format("-c {}: use 0 or 1", check));
  o.check = check == 1;
  if (o.root < 0) return usage_error(fmt::format("-r {}: a root is a rank, 0 or more", o.root));

  auto baseline_kind = parse_baseline(lower(baseline));
  if (!baseline_kind)
    return usage_error(
        fmt::format("--baseline '{}': use mpi, gloo, nccl, inplace or none", baseline));
  o.baseline = *baseline_kind;
  if (o.baseline != BaselineKind::kNone && o.collective != Collective::kAllreduce)
    return usage_error(
        fmt::format("--baseline {} compares allreduce only; run tutti-bench allreduce", baseline));
  if (!baseline_built(o.baseline)) return usage_error(baseline_missing_reason(o.baseline));
  if (lower(device) == "cuda") {
    o.device_cuda = true;
  } else if (lower(device) != "host") {
    return usage_error(fmt::format("--device '{}': use host or cuda", device));
  }
  if (o.device_cuda && !cuda_built())
    return usage_error(
        "--device cuda: this tutti-bench was built without CUDA; reconfigure with "
        "-DTUTTI_WITH_CUDA=ON on a machine with the CUDA toolkit and NCCL");
  if (o.device_cuda && o.collective != Collective::kAllreduce &&
      o.collective != Collective::kAllgather && o.collective != Collective::kBroadcast &&
      o.collective != Collective::kReduceScatter)
    return usage_error(fmt::format(
        "--device cuda: tutti runs allreduce, allgather, broadcast and reduce_scatter on device "
        "buffers, not {}",
        collective_name(o.collective)));
  if (o.baseline == BaselineKind::kNccl && !o.device_cuda)
    return usage_error("--baseline nccl compares GPU buffers: add --device cuda");
  if (o.device_cuda && (o.baseline == BaselineKind::kMpi || o.baseline == BaselineKind::kGloo))
    return usage_error(fmt::format(
        "--baseline {} takes host buffers; with --device cuda compare with --baseline nccl",
        baseline));
  if (baseline_oop != 0 && baseline_oop != 1)
    return usage_error(fmt::format("--baseline-oop {}: use 0 or 1", baseline_oop));
  o.baseline_out_of_place = baseline_oop == 1;
  if (o.rounds < 1) return usage_error(fmt::format("--rounds {}: need at least 1 round", o.rounds));
  if (comm_kind == "dup") {
    o.split_groups = -1;
  } else if (comm_kind.starts_with("split:")) {
    auto groups = parse_size(comm_kind.substr(6));
    if (!groups || *groups < 1 || *groups > 4096)
      return usage_error(fmt::format("--comm '{}': split:N takes 1 to 4096 groups", comm_kind));
    o.split_groups = static_cast<int>(*groups);
  } else if (comm_kind != "world") {
    return usage_error(fmt::format("--comm '{}': use world, dup or split:N", comm_kind));
  }
  if (o.split_groups != 0 && o.baseline != BaselineKind::kNone)
    return usage_error("--baseline runs on the world: leave --comm at world");
  if (!o.tune_path.empty() && o.collective != Collective::kAllreduce)
    return usage_error("--tune fits allreduce algorithms; run tutti-bench allreduce --tune FILE");

  auto type_list = parse_list<DataType>(types, kAllTypes, &parse_type);
  if (!type_list)
    return usage_error(
        fmt::format("-d '{}': use float, double, half, bfloat16, int32, int64, uint8, int8, int16, "
                    "bool (or float32, float64, float16, bf16, int), a comma list, or all",
                    types));
  auto op_list = parse_list<ReduceOp>(ops, kAllOps, &parse_op);
  if (!op_list)
    return usage_error(fmt::format(
        "-o '{}': use sum, prod, min, max, avg, band, bor, bxor, a comma list, or all", ops));
  o.types = *type_list;
  o.ops = is_reduction(o.collective) ? *op_list : std::vector<ReduceOp>{ReduceOp::kSum};
  const bool any_defined = std::any_of(o.types.begin(), o.types.end(), [&](DataType t) {
    return std::any_of(o.ops.begin(), o.ops.end(), [&](ReduceOp op) { return supports(t, op); });
  });
  if (!any_defined)
    return usage_error(
        fmt::format("-d '{}' -o '{}': no type here defines any of these ops "
                    "(bitwise ops take integer and bool types; bool has no avg)",
                    types, ops));
  return BenchParse{std::move(o), 0, ""};
}

}  // namespace tutti::bench
