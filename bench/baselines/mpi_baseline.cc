#include "baselines/mpi_baseline.hpp"

#include <fmt/format.h>
// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "env_value.hpp"

namespace tutti::bench {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int len = 0;
  MPI_Error_string(rc, text.data(), &len);
  throw Error(ErrorCode::kSystem,
              fmt::format("--baseline mpi: {} failed: {}", what, std::string(text.data(), len)));
}

bool has_env(const char* name) {
  return env_value(name).has_value();
}

std::string library_version() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
  int len = 0;
  if (MPI_Get_library_version(text.data(), &len) != MPI_SUCCESS) return "MPI";
  std::string v(text.data(), static_cast<size_t>(len));
  v = v.substr(0, v.find_first_of(",\n"));
  return v;
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
    default:
      return MPI_DATATYPE_NULL;  // float16/bfloat16: MPI 3.1 has none
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kProd:
      return MPI_PROD;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
    default:
      return MPI_OP_NULL;  // avg: no MPI op
  }
}

class MpiBaseline final : public Baseline {
 public:
  std::string description() const override {
    return fmt::format("{}, MPI_Allreduce on MPI_COMM_WORLD (MPI_IN_PLACE for the in-place column)",
                       library_version());
  }
  bool supports(DataType type, ReduceOp op) const override {
    return mpi_type(type) != MPI_DATATYPE_NULL && mpi_op(op) != MPI_OP_NULL;
  }
  void prepare(void*, size_t count, DataType, ReduceOp) override {
    if (count > static_cast<size_t>(INT32_MAX))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--baseline mpi: {} elements do not fit MPI's int count; use a "
                              "smaller -e",
                              count));
  }
  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count), mpi_type(type), mpi_op(op),
                            MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
  void allreduce_out_of_place(const void* send, void* recv, size_t count, DataType type,
                              ReduceOp op) override {
    check_mpi(MPI_Allreduce(send, recv, static_cast<int>(count), mpi_type(type), mpi_op(op),
                            MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
};

class MpiSession final : public BaselineSession {
 public:
  MpiSession() {
    if (!has_env("OMPI_COMM_WORLD_SIZE"))
      throw Error(ErrorCode::kConfig,
                  "--baseline mpi needs a job started by Open MPI's mpirun, e.g. mpirun -np 2 "
                  "tutti-bench allreduce --baseline mpi (as root add --allow-run-as-root); under "
                  "tuttirun use --baseline gloo");
    // SERIALIZED: tutti's MPI transport (TUTTI_TRANSPORT=mpi) calls MPI from the thread that
    // drives the communicator, one call at a time; Open MPI takes no locks below MULTIPLE, so
    // MPI_Allreduce runs as fast as under plain MPI_Init. tutti::init() then meets the other ranks
    // through MPI (rank 0's store address goes out by MPI_Bcast) and leaves MPI to us.
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
  }
  ~MpiSession() override { MPI_Finalize(); }
  void abort_job(int code) noexcept override { MPI_Abort(MPI_COMM_WORLD, code); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  std::unique_ptr<Baseline> connect(Communicator& comm) override {
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != comm.rank() || size != comm.size())
      throw Error(ErrorCode::kConfig,
                  fmt::format("--baseline mpi: MPI says rank {} of {}, tutti says rank {} of {}; "
                              "start the job with mpirun alone (not under tuttirun)",
                              rank, size, comm.rank(), comm.size()));
    return std::make_unique<MpiBaseline>();
  }
};

}  // namespace

std::unique_ptr<BaselineSession> start_mpi_session() {
  return std::make_unique<MpiSession>();
}

}  // namespace tutti::bench
