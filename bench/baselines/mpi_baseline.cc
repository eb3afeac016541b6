#include "baselines/mpi_baseline.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "env_value.hpp"
#include "net/fd.hpp"

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

// A TCP port the kernel says is free right now: bind port 0, read it back, close. Another process
// could take it before rank 0's store binds it; tutti::init() then fails naming the port, and a
// rerun picks another.
int pick_free_port() {
  net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid())
    throw Error(ErrorCode::kSystem,
                fmt::format("--baseline mpi: rank 0 cannot open a socket to pick a store port: {}",
                            std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw Error(ErrorCode::kSystem,
                fmt::format("--baseline mpi: rank 0 cannot bind port 0 to pick a store port: {}; "
                            "set MASTER_ADDR and MASTER_PORT yourself (mpirun -x)",
                            std::strerror(errno)));
  return ntohs(addr.sin_port);
}

std::string host_name() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return "localhost";
  return host.data();
}

// Rank 0's address as the others reach it: loopback when every rank runs on rank 0's host (it
// always works there), else what rank 0's host name resolves to.
std::string master_address(int rank) {
  std::array<char, 256> root_host{};
  std::string mine = host_name();
  if (rank == 0) std::strncpy(root_host.data(), mine.c_str(), root_host.size() - 1);
  check_mpi(
      MPI_Bcast(root_host.data(), static_cast<int>(root_host.size()), MPI_CHAR, 0, MPI_COMM_WORLD),
      "MPI_Bcast of rank 0's host name");
  int same = mine == root_host.data() ? 1 : 0;
  int all_same = 0;
  check_mpi(MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD),
            "MPI_Allreduce of host names");
  if (all_same) return "127.0.0.1";
  return root_host.data();
}

// Hands tutti::init() a store at rank 0 when mpirun gave none (see mpi_baseline.hpp).
void publish_store_address(int rank) {
  if (has_env("TUTTI_STORE") || (has_env("MASTER_ADDR") && has_env("MASTER_PORT"))) return;
  std::string addr = master_address(rank);
  int port = rank == 0 ? pick_free_port() : 0;
  check_mpi(MPI_Bcast(&port, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast of the store port");
  ::setenv("MASTER_ADDR", addr.c_str(), 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
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
    return fmt::format("{}, MPI_Allreduce(MPI_IN_PLACE) on MPI_COMM_WORLD", library_version());
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
};

class MpiSession final : public BaselineSession {
 public:
  MpiSession() {
    if (!has_env("OMPI_COMM_WORLD_SIZE"))
      throw Error(ErrorCode::kConfig,
                  "--baseline mpi needs a job started by Open MPI's mpirun, e.g. mpirun -np 2 "
                  "tutti-bench allreduce --baseline mpi (as root add --allow-run-as-root); under "
                  "tuttirun use --baseline gloo");
    check_mpi(MPI_Init(nullptr, nullptr), "MPI_Init");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    publish_store_address(rank);
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
