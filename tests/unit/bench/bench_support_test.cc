// tutti-bench's pieces that need no running job: option parsing and the sweep, the data and its
// expected reductions, nccl-tests' layouts and bandwidth factors, and the output format.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench_data.hpp"
#include "bench_options.hpp"
#include "collective_runner.hpp"
#include "report.hpp"
#include "typed_values.hpp"

namespace tutti::bench {
namespace {

BenchParse parse(std::vector<std::string> args) {
  return parse_bench_options(args);
}

TEST(BenchOptions, Defaults) {
  BenchParse p = parse({"allreduce"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->min_bytes, 8u);
  EXPECT_EQ(p.options->max_bytes, 32u << 20);
  EXPECT_EQ(p.options->step_factor, 2u);
  EXPECT_EQ(p.options->iters, 20);
  EXPECT_EQ(p.options->warmup_iters, 5);
  EXPECT_TRUE(p.options->check);
  EXPECT_EQ(p.options->types, std::vector<DataType>{DataType::kFloat32});
  EXPECT_EQ(p.options->ops, std::vector<ReduceOp>{ReduceOp::kSum});
}

TEST(BenchOptions, NcclTestsFlags) {
  BenchParse p = parse({"reduce_scatter", "-b", "1K", "-e", "2M", "-f", "4", "-n", "3", "-w", "0",
                        "-c", "0", "-d", "half,bf16,int", "-o", "all", "--json", "x.json"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->collective, Collective::kReduceScatter);
  EXPECT_EQ(p.options->min_bytes, 1024u);
  EXPECT_EQ(p.options->max_bytes, 2u << 20);
  EXPECT_EQ(p.options->step_factor, 4u);
  EXPECT_FALSE(p.options->check);
  EXPECT_EQ(p.options->types,
            (std::vector<DataType>{DataType::kFloat16, DataType::kBFloat16, DataType::kInt32}));
  EXPECT_EQ(p.options->ops.size(), 8u);  // all: every op (it used to stop at five)
  EXPECT_EQ(p.options->json_path, "x.json");
  EXPECT_EQ(parse({"allgather", "-d", "all"}).options->types.size(), 10u);  // every type
  // A list that defines no pair at all is a usage error; one that defines some runs those.
  EXPECT_FALSE(parse({"allreduce", "-d", "float,half", "-o", "band,bxor"}).options);
  EXPECT_TRUE(parse({"allreduce", "-d", "float,int8", "-o", "band"}).options);
  EXPECT_FALSE(parse({"allreduce", "-d", "bool", "-o", "avg"}).options);
  // Collectives without a reduction run once, whatever -o says.
  EXPECT_EQ(parse({"broadcast", "-o", "all", "-r", "3"}).options->ops.size(), 1u);
  EXPECT_EQ(parse({"broadcast", "-r", "3"}).options->root, 3);
}

TEST(BenchOptions, StepBytesAloneMakesALinearSweep) {
  BenchParse p = parse({"allreduce", "-b", "0", "-e", "10", "-i", "4"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->step_factor, 1u);
  EXPECT_EQ(sweep_sizes(*p.options), (std::vector<uint64_t>{0, 4, 8}));
  BenchParse both = parse({"allreduce", "-b", "8", "-e", "64", "-i", "4", "-f", "2"});
  EXPECT_EQ(sweep_sizes(*both.options), (std::vector<uint64_t>{8, 16, 32, 64}));
  BenchParse one = parse({"allreduce", "-b", "1M", "-e", "1M"});
  EXPECT_EQ(sweep_sizes(*one.options), (std::vector<uint64_t>{1u << 20}));
}

TEST(BenchOptions, SizesListsExactlyTheSizes) {
  BenchParse p = parse({"allreduce", "--sizes", "64M,8,1M,8"});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(sweep_sizes(*p.options), (std::vector<uint64_t>{8, 1u << 20, 64u << 20}));
  EXPECT_EQ(p.options->min_bytes, 8u);
  EXPECT_EQ(p.options->max_bytes, 64u << 20);  // the buffers are sized for the largest
  for (auto args :
       std::vector<std::vector<std::string>>{{"allreduce", "--sizes", "8,,1M"},
                                             {"allreduce", "--sizes", "8,1Q"},
                                             {"allreduce", "--sizes", ""},
                                             {"allreduce", "--sizes", "8", "-e", "1M"}}) {
    BenchParse bad = parse(args);
    EXPECT_FALSE(bad.options);
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.message.find("--sizes"), std::string::npos) << bad.message;
  }
}

TEST(BenchOptions, BadFlagsExitTwo) {
  for (auto args : std::vector<std::vector<std::string>>{{},
                                                         {"alltoallw"},
                                                         {"allreduce", "-b", "1X"},
                                                         {"allreduce", "-b", "2M", "-e", "1M"},
                                                         {"allreduce", "-d", "int4"},
                                                         {"allreduce", "-o", "xor"},
                                                         {"allreduce", "-c", "2"},
                                                         {"allreduce", "-n", "0"},
                                                         {"allreduce", "-f", "0"},
                                                         {"allreduce", "-i", "0", "-f", "1"},
                                                         {"allreduce", "--bogus"}}) {
    BenchParse p = parse(args);
    EXPECT_FALSE(p.options);
    EXPECT_EQ(p.exit_code, 2) << p.message;
    EXPECT_NE(p.message.find("tutti-bench: "), std::string::npos);
  }
  EXPECT_EQ(parse({"--help"}).exit_code, 0);
  EXPECT_EQ(parse({"allreduce", "-h"}).exit_code, 0);
}

TEST(BenchOptions, Names) {
  EXPECT_EQ(parse_type("float32"), DataType::kFloat32);
  EXPECT_EQ(parse_type("FLOAT64"), DataType::kFloat64);
  EXPECT_EQ(parse_type("float16"), DataType::kFloat16);
  EXPECT_EQ(parse_type("int8"), DataType::kInt8);
  EXPECT_EQ(parse_type("bool"), DataType::kBool);
  EXPECT_EQ(parse_type("int4"), std::nullopt);
  EXPECT_EQ(parse_op("bxor"), ReduceOp::kBxor);
  for (const char* c : {"reduce", "gather", "scatter", "alltoall", "sendrecv"}) {
    BenchParse p = parse({c});
    ASSERT_TRUE(p.options) << c << ": " << p.message;
    EXPECT_EQ(collective_name(p.options->collective), c);
  }
  EXPECT_EQ(type_name(DataType::kFloat16), "half");
  EXPECT_EQ(parse_op("avg"), ReduceOp::kAvg);
  EXPECT_EQ(parse_size("64K"), 65536u);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("1MB"), 1u << 20);
  EXPECT_EQ(parse_size(""), std::nullopt);
  EXPECT_EQ(parse_size("-1"), std::nullopt);
}

class Types : public ::testing::TestWithParam<DataType> {};

TEST_P(Types, StoreLoadRoundTripsSmallIntegers) {
  std::vector<std::byte> buf(8 * 4);
  for (double v : {0.0, 1.0, 2.0, 6.0, 97.0}) {
    set_value(GetParam(), buf.data(), 3, v);
    EXPECT_EQ(get_value(GetParam(), buf.data(), 3), v);
  }
}

// Expected reductions, computed independently for a few world sizes.
TEST_P(Types, ExpectedReductions) {
  const DataType t = GetParam();
  for (int n : {1, 2, 3, 4, 7, 8}) {
    for (size_t i = 0; i < 24; ++i) {
      double sum = 0, prod = 1, mn = 1e9, mx = -1e9;
      for (int r = 0; r < n; ++r) {
        sum += reduce_input(ReduceOp::kSum, r, n, i);
        prod *= reduce_input(ReduceOp::kProd, r, n, i);
        mn = std::min(mn, reduce_input(ReduceOp::kMin, r, n, i));
        mx = std::max(mx, reduce_input(ReduceOp::kMax, r, n, i));
        EXPECT_GE(reduce_input(ReduceOp::kSum, r, n, i), 1.0);
      }
      EXPECT_EQ(sum, n * (2.0 + static_cast<double>(i % 4))) << "n " << n << " i " << i;
      EXPECT_EQ(reduce_expected(t, ReduceOp::kSum, n, i), sum);
      EXPECT_EQ(reduce_expected(t, ReduceOp::kAvg, n, i), 2.0 + static_cast<double>(i % 4));
      EXPECT_EQ(reduce_expected(t, ReduceOp::kProd, n, i), prod);  // at most 2^3 for n <= 8
      EXPECT_EQ(reduce_expected(t, ReduceOp::kMin, n, i), mn);
      EXPECT_EQ(reduce_expected(t, ReduceOp::kMax, n, i), mx);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Types,
                         ::testing::Values(DataType::kFloat32, DataType::kFloat64,
                                           DataType::kFloat16, DataType::kBFloat16,
                                           DataType::kInt32, DataType::kInt64, DataType::kUInt8));

TEST(BenchData, WrapAndOverflowLikeTheType) {
  // 40 ranks: prod reaches 2^14 (f16 exact), 64 ranks: 2^22 > f16's max -> inf; uint8 wraps to 0.
  int twos = 0;
  for (int r = 0; r < 64; ++r) twos += reduce_input(ReduceOp::kProd, r, 64, 0) == 2.0;
  EXPECT_EQ(twos, 22);
  EXPECT_TRUE(std::isinf(reduce_expected(DataType::kFloat16, ReduceOp::kProd, 64, 0)));
  EXPECT_EQ(reduce_expected(DataType::kBFloat16, ReduceOp::kProd, 64, 0), 4194304.0);
  EXPECT_EQ(reduce_expected(DataType::kUInt8, ReduceOp::kProd, 64, 0), 0.0);
  EXPECT_EQ(reduce_expected(DataType::kInt64, ReduceOp::kProd, 64, 0), 4194304.0);
}

TEST(BenchData, HalfConversions) {
  using values::bf16_to_float, values::f16_to_float, values::float_to_bf16, values::float_to_f16;
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f16_to_float(0x0001), 1.0f / 16777216.0f);
  EXPECT_EQ(float_to_f16(1.0f / 16777216.0f), 0x0001);
  EXPECT_EQ(float_to_f16(1.0f + 1.0f / 2048.0f), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x4040), 3.0f);
  for (int v = -300; v <= 300; ++v) {
    EXPECT_EQ(f16_to_float(float_to_f16(static_cast<float>(v))), static_cast<float>(v));
    if (v > -256 && v < 256) {
      EXPECT_EQ(bf16_to_float(float_to_bf16(static_cast<float>(v))), static_cast<float>(v));
    }
  }
}

TEST(BenchLayout, NcclTestsCounts) {
  Layout ag = layout_for(Collective::kAllgather, 10, 4);
  EXPECT_EQ(ag.send_count, 2u);
  EXPECT_EQ(ag.recv_count, 8u);
  EXPECT_EQ(ag.param_count, 2u);
  EXPECT_EQ(ag.send_inplace_offset, 2u);
  Layout rs = layout_for(Collective::kReduceScatter, 10, 4);
  EXPECT_EQ(rs.send_count, 8u);
  EXPECT_EQ(rs.recv_count, 2u);
  EXPECT_EQ(rs.recv_inplace_offset, 2u);
  Layout ar = layout_for(Collective::kAllreduce, 10, 4);
  EXPECT_EQ(ar.param_count, 10u);
  EXPECT_EQ(row_bytes(ag, DataType::kFloat32), 32u);
  EXPECT_EQ(row_bytes(rs, DataType::kFloat64), 64u);
  // nccl-tests' gather/scatter/alltoall: count / n per rank; reduce/sendrecv: the whole count.
  Layout g = layout_for(Collective::kGather, 10, 4);
  EXPECT_EQ(g.send_count, 2u);
  EXPECT_EQ(g.recv_count, 8u);
  Layout sc = layout_for(Collective::kScatter, 10, 4);
  EXPECT_EQ(sc.send_count, 8u);
  EXPECT_EQ(sc.recv_count, 2u);
  Layout a2a = layout_for(Collective::kAlltoall, 10, 4);
  EXPECT_EQ(a2a.send_count, 8u);
  EXPECT_EQ(a2a.recv_count, 8u);
  EXPECT_EQ(a2a.param_count, 2u);
  EXPECT_EQ(layout_for(Collective::kReduce, 10, 4).param_count, 10u);
  EXPECT_EQ(layout_for(Collective::kSendRecv, 10, 4).recv_count, 10u);
}

TEST(BenchLayout, BusBandwidthFactors) {
  // 1e9 bytes in 1 s: algbw 1 GB/s.
  const size_t count = 250000000;  // float32
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kAllreduce, count, DataType::kFloat32, 1.0, 4).alg, 1.0);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kAllreduce, count, DataType::kFloat32, 1.0, 4).bus, 1.5);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kBroadcast, count, DataType::kFloat32, 2.0, 4).bus, 0.5);
  // allgather / reduce_scatter: param count is per rank; the size is n times it.
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kAllgather, count, DataType::kFloat32, 1.0, 4).alg, 4.0);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kAllgather, count, DataType::kFloat32, 1.0, 4).bus, 3.0);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kReduceScatter, count, DataType::kFloat32, 1.0, 8).bus,
                   7.0);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kAllreduce, count, DataType::kFloat32, 1.0, 1).bus, 0.0);
  // nccl-tests: reduce and sendrecv factor 1; gather, scatter, alltoall (n-1)/n of n blocks.
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kReduce, count, DataType::kFloat32, 1.0, 4).bus, 1.0);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kSendRecv, count, DataType::kFloat32, 1.0, 4).bus, 1.0);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kGather, count, DataType::kFloat32, 1.0, 4).bus, 3.0);
  EXPECT_DOUBLE_EQ(bandwidth(Collective::kAlltoall, count, DataType::kFloat32, 1.0, 4).bus, 3.0);
}

TEST(BenchReport, NcclTestsFormat) {
  BenchOptions o;
  EXPECT_EQ(header_text(o, {{0, 42, "node1"}}),
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 33554432 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 "
            "validation: 1 graph: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid     42 on      "
            "node1 device  0 [cpu] "
            "host memory\n");
  o.step_factor = 1;
  EXPECT_NE(header_text(o, {}).find("step: 1048576(bytes)"), std::string::npos);
  std::string cols = column_header_text();
  EXPECT_NE(cols.find("#       size         count      type   redop    root     time   algbw   "
                      "busbw #wrong     time"),
            std::string::npos)
      << cols;
  EXPECT_NE(cols.find("out-of-place                       in-place"), std::string::npos);
  Row row;
  row.size_bytes = 1024;
  row.count = 256;
  row.redop = "sum";
  row.out_of_place = {12.345, 0.08, 0.12, 0};
  row.in_place = {150.0, 1.5, 2.25, -1};
  EXPECT_EQ(row_text(row),
            "        1024           256     float     sum      -1    12.35    0.08    0.12      0  "
            "  150.0    1.50    "
            "2.25    N/A\n");
  EXPECT_EQ(format_time(12345.6), "  12346");
  EXPECT_EQ(footer_text(0, 1.5),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n#\n");
  EXPECT_EQ(footer_text(3, 0),
            "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 0 \n#\n");
}

// The checker itself, on a real one-rank world: a correct run has no wrong element, and every
// element that was not written (poison) or was damaged afterwards is counted.
class Checker : public ::testing::TestWithParam<std::tuple<Collective, DataType, bool>> {};

TEST_P(Checker, CountsExactlyTheBadElements) {
  auto [collective, type, in_place] = GetParam();
  Communicator& comm = init();
  ASSERT_EQ(comm.size(), 1);
  std::vector<std::byte> send(4096), recv(4096);
  CollectiveRunner runner(comm, send, recv);
  const size_t count = 100;
  RunSpec spec{collective, type, ReduceOp::kSum, 0, in_place, layout_for(collective, count, 1)};

  runner.fill(spec);
  runner.run(spec);
  EXPECT_EQ(runner.count_wrong(spec), 0u);

  // Damage three elements of the result.
  for (size_t i : {0u, 17u, 99u}) set_value(type, recv.data(), i, 77.5);
  EXPECT_EQ(runner.count_wrong(spec), 3u);

  // Without the call, an out-of-place result is all poison (in place, the input is the answer
  // for one rank, except for broadcast where the root's buffer is always the answer).
  runner.fill(spec);
  const bool untouched_is_right = in_place || collective == Collective::kBroadcast;
  EXPECT_EQ(runner.count_wrong(spec), untouched_is_right ? 0u : count);
}

INSTANTIATE_TEST_SUITE_P(
    All, Checker,
    ::testing::Combine(::testing::Values(Collective::kAllreduce, Collective::kAllgather,
                                         Collective::kBroadcast, Collective::kReduceScatter),
                       ::testing::Values(DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                         DataType::kBFloat16, DataType::kInt32, DataType::kInt64,
                                         DataType::kUInt8),
                       ::testing::Bool()));

}  // namespace
}  // namespace tutti::bench
