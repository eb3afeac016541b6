#include "baselines/nccl_baseline.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <thread>

#include "device/cuda/nccl_types.hpp"

namespace tutti::bench {

namespace {

// The baseline gets the same deadline discipline as tutti: a peer that never comes or an
// operation that never ends is an error after this long, not a hang.
constexpr std::chrono::seconds kDeadline{120};

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw Error(ErrorCode::kDevice,
                fmt::format("baseline nccl: {} failed: {}", call, cudaGetErrorString(status)));
}

void check_nccl(ncclResult_t status, const char* call) {
  if (status != ncclSuccess && status != ncclInProgress)
    throw Error(ErrorCode::kDevice,
                fmt::format("baseline nccl: {} failed: {}", call, ncclGetErrorString(status)));
}

// The runtime's own table (device/cuda/nccl_types.hpp): what NCCL cannot reduce is refused here
// as tutti's device path refuses it.
ncclDataType_t nccl_type(DataType t) {
  if (const auto type = device::cuda::nccl_type(t)) return *type;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("baseline nccl: NCCL has no {}", tutti::to_string(t)));
}

ncclRedOp_t nccl_op(DataType t, ReduceOp op) {
  if (const auto nccl = device::cuda::nccl_op(t, op)) return *nccl;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("baseline nccl: NCCL has no {} reduction of {}", tutti::to_string(op),
                          tutti::to_string(t)));
}

class NcclBaseline final : public Baseline {
 public:
  explicit NcclBaseline(Communicator& comm) : rank_(comm.rank()) {
    ncclUniqueId id{};
    if (comm.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    comm.broadcast(&id, sizeof id, DataType::kUInt8, 0);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so that a rank that never joins ends in an error, not a hang
    check_nccl(ncclCommInitRankConfig(&comm_, comm.size(), id, comm.rank(), &config),
               "ncclCommInitRankConfig");
    wait_comm("ncclCommInitRankConfig");
    int version = 0;
    ncclGetVersion(&version);
    int device = 0;
    cudaGetDevice(&device);
    description_ = fmt::format("NCCL {}.{}.{}, ncclAllReduce on GPU {}", version / 10000,
                               version / 100 % 100, version % 100, device);
  }
  ~NcclBaseline() override {
    if (comm_ != nullptr) {
      if (broken_)
        ncclCommAbort(comm_);
      else
        ncclCommDestroy(comm_);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  std::string description() const override { return description_; }
  bool supports(DataType type, ReduceOp op) const override {
    if (type == DataType::kInt16 || is_bitwise(op)) return false;
    return type != DataType::kBool || op == ReduceOp::kMax || op == ReduceOp::kMin;
  }
  void prepare(void*, size_t, DataType, ReduceOp) override {}
  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override {
    allreduce_out_of_place(buf, buf, count, type, op);
  }
  void allreduce_out_of_place(const void* send, void* recv, size_t count, DataType type,
                              ReduceOp op) override {
    settle(ncclAllReduce(send, recv, count, nccl_type(type), nccl_op(type, op), comm_, stream_),
           "ncclAllReduce");
    wait_stream();
  }

 private:
  // A non-blocking communicator may answer ncclInProgress from an enqueue (the first calls make
  // their connections); NCCL refuses the next call on it ("Attempt to use communicator before the
  // previous operation returned ncclSuccess") until its state left ncclInProgress, which broke
  // every baseline at np >= 2 on the first H100 run.
  void settle(ncclResult_t status, const char* call) {
    check_nccl(status, call);
    if (status == ncclInProgress) wait_comm(call);
  }

  // Polls instead of blocking so that a dead peer (NCCL's async error) or the deadline ends it.
  void wait_comm(const char* call) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    ncclResult_t state = ncclInProgress;
    while (true) {
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclInProgress) break;
      if (std::chrono::steady_clock::now() > deadline) fail(fmt::format("{} timed out", call));
      std::this_thread::yield();
    }
    if (state != ncclSuccess) fail(fmt::format("{} failed: {}", call, ncclGetErrorString(state)));
  }
  void wait_stream() {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (true) {
      const cudaError_t status = cudaStreamQuery(stream_);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) check_cuda(status, "cudaStreamQuery");
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        fail(fmt::format("ncclAllReduce failed: {}", ncclGetErrorString(async)));
      if (std::chrono::steady_clock::now() > deadline) fail("ncclAllReduce timed out");
    }
  }
  [[noreturn]] void fail(const std::string& what) {
    broken_ = true;
    throw Error(ErrorCode::kDevice, fmt::format("baseline nccl on rank {}: {} (after {} s at most)",
                                                rank_, what, kDeadline.count()));
  }

  int rank_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool broken_ = false;
  std::string description_;
};

class NcclSession final : public BaselineSession {
 public:
  std::unique_ptr<Baseline> connect(Communicator& comm) override {
    return std::make_unique<NcclBaseline>(comm);
  }
};

}  // namespace

std::unique_ptr<BaselineSession> start_nccl_session() {
  return std::make_unique<NcclSession>();
}

}  // namespace tutti::bench
