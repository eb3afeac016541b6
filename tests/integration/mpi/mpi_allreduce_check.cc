// mpi_allreduce_check: under Open MPI's mpirun, tutti's allreduce against MPI_Allreduce on the same
// data, for every dtype, sum/max/min and a sweep of counts. Inputs are small integers, so every
// result is exact in every type and the two must agree bit for bit (float16 and bfloat16, which MPI
// has no type for, against the sum computed here from every rank's known inputs).
//
//   mpi_allreduce_check [--counts 0,1,7,1001,100003] [--app-init] [--app-init-plain] [--from-mpi]
//
// Default: tutti_init initializes MPI (and finalizes it in tutti_finalize). --app-init: the program
// calls MPI_Init_thread first and MPI_Finalize last, tutti neither (--app-init-plain: plain
// MPI_Init, whose MPI_THREAD_SINGLE the MPI transport must refuse). --from-mpi: the communicator
// comes from MPI_COMM_WORLD (tutti/tutti_mpi.h) instead of tutti::init(). Exit 0 when all agree.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tutti/tutti_mpi.h"

namespace {

using tutti::DataType;
using tutti::ReduceOp;

int g_rank = 0;

// Rank r's element i: an integer in [-8, 8] (0..16 unsigned, 0/1 for bool).
int value(int rank, size_t i, DataType type) {
  const int v = static_cast<int>((static_cast<size_t>(rank) * 7 + i * 13) % 17);
  if (type == DataType::kBool) return v % 3 == 0 ? 1 : 0;
  if (type == DataType::kUInt8) return v;
  return v - 8;
}

uint16_t to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return static_cast<uint16_t>(x >> 16);  // exact for the small integers used here
}

uint16_t to_float16(float f) {
  if (f == 0) return 0;
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((x & 0x7fffff) >> 13));
}

// Writes v as element i of a buffer of `type`.
void store(std::vector<std::byte>& buf, size_t i, DataType type, double v) {
  std::byte* at = buf.data() + i * tutti::element_size(type);
  auto put = [&](auto x) { std::memcpy(at, &x, sizeof x); };
  switch (type) {
    case DataType::kFloat32:
      return put(static_cast<float>(v));
    case DataType::kFloat64:
      return put(v);
    case DataType::kFloat16:
      return put(to_float16(static_cast<float>(v)));
    case DataType::kBFloat16:
      return put(to_bfloat16(static_cast<float>(v)));
    case DataType::kInt32:
      return put(static_cast<int32_t>(v));
    case DataType::kInt64:
      return put(static_cast<int64_t>(v));
    case DataType::kUInt8:
      return put(static_cast<uint8_t>(v));
    case DataType::kInt8:
      return put(static_cast<int8_t>(v));
    case DataType::kInt16:
      return put(static_cast<int16_t>(v));
    case DataType::kBool:
      return put(static_cast<uint8_t>(v != 0));
  }
}

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kUInt8:
      return MPI_UINT8_T;
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kInt16:
      return MPI_INT16_T;
    case DataType::kBool:
      return MPI_C_BOOL;
    default:
      return MPI_DATATYPE_NULL;  // float16, bfloat16
  }
}

MPI_Op mpi_op(ReduceOp op, DataType type) {
  if (type == DataType::kBool) return op == ReduceOp::kMin ? MPI_LAND : MPI_LOR;
  return op == ReduceOp::kSum ? MPI_SUM : op == ReduceOp::kMax ? MPI_MAX : MPI_MIN;
}

// The expected result, for the types MPI has no datatype for.
double expected(size_t i, DataType type, ReduceOp op, int size) {
  double out = value(0, i, type);
  for (int r = 1; r < size; ++r) {
    const double v = value(r, i, type);
    out = op == ReduceOp::kSum   ? out + v
          : op == ReduceOp::kMax ? std::max(out, v)
                                 : std::min(out, v);
  }
  return out;
}

std::vector<size_t> parse_counts(const std::string& text) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(std::stoul(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

// One allreduce through tutti and its reference; returns false (after saying why) on a difference.
bool check(const tutti::Communicator& comm, size_t count, DataType type, ReduceOp op) {
  const size_t bytes = count * tutti::element_size(type);
  std::vector<std::byte> input(bytes), ours(bytes), reference(bytes);
  for (size_t i = 0; i < count; ++i) store(input, i, type, value(comm.rank(), i, type));
  comm.allreduce(input.data(), ours.data(), count, type, op);
  if (MPI_Datatype t = mpi_type(type); t != MPI_DATATYPE_NULL) {
    MPI_Allreduce(input.data(), reference.data(), static_cast<int>(count), t, mpi_op(op, type),
                  MPI_COMM_WORLD);
  } else {
    for (size_t i = 0; i < count; ++i)
      store(reference, i, type, expected(i, type, op, comm.size()));
  }
  for (size_t i = 0; i < count; ++i) {
    const size_t e = tutti::element_size(type);
    if (std::memcmp(ours.data() + i * e, reference.data() + i * e, e) != 0) {
      fmt::print(stderr, "rank {}: allreduce of {} x {} ({}) differs from {} at element {}\n",
                 g_rank, count, tutti::to_string(type), tutti::to_string(op),
                 mpi_type(type) != MPI_DATATYPE_NULL ? "MPI_Allreduce" : "the exact sum", i);
      return false;
    }
  }
  return true;
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "?";
  return name.data();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> counts = {0, 1, 7, 1001, 100003};
  bool app_init = false, from_mpi = false, plain = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--counts" && i + 1 < argc)
      counts = parse_counts(argv[++i]);
    else if (a == "--app-init")
      app_init = true;
    else if (a == "--app-init-plain")
      app_init = plain = true;
    else if (a == "--from-mpi")
      from_mpi = app_init = true;
    else {
      fmt::print(stderr,
                 "usage: mpi_allreduce_check [--counts LIST] [--app-init] [--app-init-plain] "
                 "[--from-mpi]\n");
      return 2;
    }
  }
  int failures = 0, checks = 0;
  std::string library;
  try {
    if (app_init) {
      int provided = 0;
      if (plain)
        MPI_Init(&argc, &argv);
      else
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    }
    {
      tutti::Communicator comm;
      if (from_mpi) {
        comm = tutti::communicator_from_mpi(MPI_COMM_WORLD);
      } else {
        tutti::init();
        comm = tutti::world();
      }
      g_rank = comm.rank();
      // Which MPI this run used (the MPI matrix's tests check the name): its version line.
      std::string text(MPI_MAX_LIBRARY_VERSION_STRING, '\0');
      int length = 0;
      MPI_Get_library_version(text.data(), &length);
      library = text.substr(0, std::min(text.find_first_of("\n,"), static_cast<size_t>(length)));
      int initialized = 0;
      MPI_Initialized(&initialized);
      if (!initialized) {
        fmt::print(stderr, "rank {}: MPI is not initialized after tutti::init()\n", g_rank);
        return 1;
      }
      for (int t = 0; t < tutti::kNumDataTypes; ++t)
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin})
          for (size_t count : counts) {
            ++checks;
            if (!check(comm, count, static_cast<DataType>(t), op)) ++failures;
          }
    }
    if (!from_mpi) tutti::finalize();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (app_init && finalized) {
      fmt::print(stderr, "rank {}: tutti finalized MPI, which the application initialized\n",
                 g_rank);
      return 1;
    }
    if (!app_init && !finalized) {
      fmt::print(stderr, "rank {}: tutti initialized MPI but tutti::finalize() left it running\n",
                 g_rank);
      return 1;
    }
    if (app_init) MPI_Finalize();
  } catch (const tutti::Error& e) {
    fmt::print(stderr, "rank {}: {}\n", g_rank, e.what());
    return 1;
  }
  if (failures == 0)
    fmt::print("rank {}: {} allreduces agree with MPI_Allreduce ({}) on {}\n", g_rank, checks,
               library, host_name());
  return failures == 0 ? 0 : 1;
}
