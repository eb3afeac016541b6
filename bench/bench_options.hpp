// tutti-bench's command line, in nccl-tests' spelling: tutti-bench COLLECTIVE -b 8 -e 32M -f 2 ...
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "tutti/types.hpp"

namespace tutti::bench {

enum class Collective {
  kAllreduce,
  kAllgather,
  kBroadcast,
  kReduceScatter,
  kReduce,
  kGather,
  kScatter,
  kAlltoall,
  kSendRecv,  // each rank sends to rank + 1 and receives from rank - 1 (nccl-tests' sendrecv)
};

struct BenchOptions {
  Collective collective = Collective::kAllreduce;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 32ull << 20;
  uint64_t step_factor = 2;          // > 1: geometric sweep
  uint64_t step_bytes = 1ull << 20;  // used when step_factor is 1 (nccl-tests: -i without -f)
  std::vector<uint64_t> sizes;       // --sizes: exactly these, ascending (min/max follow them)
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  std::vector<DataType> types{DataType::kFloat32};
  std::vector<ReduceOp> ops{ReduceOp::kSum};
  int root = 0;
  std::string json_path;  // empty: no JSON
  std::string csv_path;   // empty: no CSV
  // A peer timed interleaved with tutti (allreduce only): `rounds` rounds, each n iterations of
  // tutti's in-place allreduce then n of the peer's, on the same buffer.
  BaselineKind baseline = BaselineKind::kNone;
  int rounds = 5;
  bool baseline_out_of_place = true;  // --baseline-oop 0: the peer's in-place form only
  // allreduce only: fit alpha + bytes * beta to the in-place times of the algorithm this job runs
  // (TUTTI_ALGO) and merge the line into this tuning file (rank 0); empty: no tuning.
  std::string tune_path;
  // The communicator the sweep runs on: the world (0), a dup of it (-1), or a split of it into
  // this many groups (rank % N), each group running the sweep at once.
  int split_groups = 0;
  // Where the buffers live: host memory, or the GPU local_rank % GPUs (--device cuda; allreduce,
  // allgather, broadcast and reduce_scatter, the calls tutti runs on device buffers).
  bool device_cuda = false;
};

struct BenchParse {
  std::optional<BenchOptions> options;
  int exit_code = 0;
  std::string message;  // stdout when exit_code is 0, stderr otherwise
};

BenchParse parse_bench_options(std::span<const std::string> args);  // args excludes argv[0]

std::string_view collective_name(Collective c);
bool is_reduction(Collective c);
// Whether -r picks a root for it (broadcast, reduce, gather, scatter).
bool is_rooted(Collective c);

// nccl-tests' names: float, double, half, bfloat16, int32, int64, uint8; also accepted: float32,
// float64, float16, bf16, int, uint8_t spellings listed in --help. Throws nothing; nullopt if
// unknown.
std::optional<DataType> parse_type(const std::string& name);
std::optional<ReduceOp> parse_op(const std::string& name);
std::string_view type_name(DataType t);  // as nccl-tests prints it
std::string_view op_name(ReduceOp op);

// 4096, 64K, 1M, 2G (powers of 1024); nullopt when malformed.
std::optional<uint64_t> parse_size(const std::string& text);

// The sweep: --sizes when given, else min, then *factor (or +step) while <= max.
std::vector<uint64_t> sweep_sizes(const BenchOptions& o);

}  // namespace tutti::bench
