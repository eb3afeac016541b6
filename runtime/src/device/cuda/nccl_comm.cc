#include "device/cuda/nccl_comm.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/deadline.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/nccl_library.hpp"
#include "device/cuda/nccl_types.hpp"

namespace tutti::device::cuda {

namespace {

static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<UniqueId>,
              "device::UniqueId must hold ncclUniqueId's bytes");

// A communicator that is not yet a CudaNcclComm (init or split still running) is aborted on every
// way out but success.
struct AbortComm {
  void operator()(ncclComm_t comm) const noexcept { (void)nccl().CommAbort(comm); }
};
using PendingComm = std::unique_ptr<std::remove_pointer_t<ncclComm_t>, AbortComm>;

ncclConfig_t non_blocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Polls ncclCommGetAsyncError until the communicator leaves ncclInProgress or `deadline` passes
// (then ncclInProgress comes back). The first polls only yield: an enqueue usually settles within
// microseconds, an init or a connection takes milliseconds to seconds. `stop` is checked between
// polls (abort from another thread).
template <typename Stop>
ncclResult_t poll_state(ncclComm_t comm, Deadline deadline, Stop&& stop) {
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t status = nccl().CommGetAsyncError(comm, &state);
    if (status != ncclSuccess) return status;
    if (state != ncclInProgress) return state;
    if (stop() || deadline.expired()) return ncclInProgress;
    if (polls < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

ncclResult_t poll_state(ncclComm_t comm, Deadline deadline) {
  return poll_state(comm, deadline, [] { return false; });
}

std::string nccl_detail(ncclResult_t state, ncclComm_t comm) {
  std::string text = nccl().GetErrorString(state);
  const char* last = nccl().GetLastError(comm);
  if (last != nullptr && *last != '\0') {
    text += ": ";
    text += last;
  }
  return text;
}

void set_device_for(int device, std::string_view what) {
  check_cuda(cudaSetDevice(device), fmt::format("cudaSetDevice({}) for {}", device, what));
}

// The scalar ncclRedOpCreatePreMulSum multiplies by, in the buffer's own type.
union Scalar {
  float f32;
  double f64;
  __half f16;
  __nv_bfloat16 bf16;
  Scalar() : f64(0) {}
};

class CudaNcclComm final : public NcclComm {
 public:
  // Takes a communicator whose init or split completed; aborts it if even its rank is unknown.
  CudaNcclComm(PendingComm comm, int device, std::chrono::milliseconds timeout)
      : device_(device), timeout_(timeout) {
    check_nccl(nccl().CommUserRank(comm.get(), &rank_), "ncclCommUserRank", comm.get());
    check_nccl(nccl().CommCount(comm.get(), &size_), "ncclCommCount", comm.get());
    comm_ = comm.release();
  }

  ~CudaNcclComm() override {
    if (aborted_.load()) return;
    // Finalize flushes this rank's outstanding work; a communicator that failed, or whose peers
    // are gone and never let finalize finish, is aborted instead so that no destructor hangs.
    (void)cudaSetDevice(device_);
    ncclResult_t state = ncclSuccess;
    bool clean = nccl().CommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclSuccess;
    if (clean) {
      const ncclResult_t status = nccl().CommFinalize(comm_);
      clean = (status == ncclSuccess || status == ncclInProgress) &&
              poll_state(comm_, Deadline::after(timeout_)) == ncclSuccess;
    }
    if (clean) {
      (void)nccl().CommDestroy(comm_);
    } else {
      log::debug("NCCL communicator (rank {} of {}) aborted on destruction: {}", rank_, size_,
                 nccl_detail(state, comm_));
      (void)nccl().CommAbort(comm_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  bool supports(DataType type, ReduceOp op) const override { return nccl_op(type, op).has_value(); }

  void all_reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                  double scale, StreamId stream) override {
    reduction(
        "ncclAllReduce", type, op, scale, [&](ncclComm_t comm, ncclDataType_t t, ncclRedOp_t o) {
          return nccl().AllReduce(send, recv, count, t, o, comm, static_cast<cudaStream_t>(stream));
        });
  }

  void reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op,
                      double scale, StreamId stream) override {
    reduction("ncclReduceScatter", type, op, scale,
              [&](ncclComm_t comm, ncclDataType_t t, ncclRedOp_t o) {
                return nccl().ReduceScatter(send, recv, recv_count, t, o, comm,
                                            static_cast<cudaStream_t>(stream));
              });
  }

  void all_gather(const void* send, void* recv, size_t send_count, DataType type,
                  StreamId stream) override {
    const ncclDataType_t t = data_type(type, "ncclAllGather");
    call("ncclAllGather", [&](ncclComm_t comm) {
      return nccl().AllGather(send, recv, send_count, t, comm, static_cast<cudaStream_t>(stream));
    });
  }

  void broadcast(const void* send, void* recv, size_t count, DataType type, int root,
                 StreamId stream) override {
    const ncclDataType_t t = data_type(type, "ncclBroadcast");
    call("ncclBroadcast", [&](ncclComm_t comm) {
      return nccl().Broadcast(send, recv, count, t, root, comm, static_cast<cudaStream_t>(stream));
    });
  }

  void group_start() override {
    std::lock_guard lock(mutex_);
    live("ncclGroupStart");
    check_nccl(nccl().GroupStart(), "ncclGroupStart", comm_);
    ++group_depth_;
  }

  void group_end() override {
    std::unique_lock lock(mutex_);
    live("ncclGroupEnd");
    if (group_depth_ == 0)
      throw make_error(ErrorCode::kInternal, "ncclGroupEnd without ncclGroupStart");
    --group_depth_;
    set_device_for(device_, "ncclGroupEnd");
    const ncclResult_t status = nccl().GroupEnd();
    if (status != ncclSuccess && status != ncclInProgress)
      check_nccl(status, "ncclGroupEnd", comm_);
    if (group_depth_ == 0) {
      settle(lock, "ncclGroupEnd");
      destroy_pending_ops();
    }
  }

  void send(const void* buf, size_t bytes, int peer, StreamId stream) override {
    call("ncclSend", [&](ncclComm_t comm) {
      return nccl().Send(buf, bytes, ncclUint8, peer, comm, static_cast<cudaStream_t>(stream));
    });
  }

  void recv(void* buf, size_t bytes, int peer, StreamId stream) override {
    call("ncclRecv", [&](ncclComm_t comm) {
      return nccl().Recv(buf, bytes, ncclUint8, peer, comm, static_cast<cudaStream_t>(stream));
    });
  }

  std::string async_error() override {
    std::lock_guard lock(mutex_);
    if (aborted_.load()) return "the NCCL communicator was aborted";
    ncclResult_t state = ncclSuccess;
    const ncclResult_t status = nccl().CommGetAsyncError(comm_, &state);
    if (status != ncclSuccess) return nccl_detail(status, comm_);
    if (state == ncclSuccess || state == ncclInProgress) return "";
    return nccl_detail(state, comm_);
  }

  void abort() noexcept override {
    if (aborted_.exchange(true)) return;
    // A thread polling in settle() sees aborted_ between polls and lets go of the mutex.
    std::lock_guard lock(mutex_);
    abort_locked();
  }

  std::unique_ptr<NcclComm> split(int color, int key, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    live("ncclCommSplit");
    set_device_for(device_, "ncclCommSplit");
    ncclConfig_t config = non_blocking_config();
    // In non-blocking mode ncclCommSplit returns with *newcomm still null and NCCL's init job
    // writes the child there when it finishes, later, from its own thread. So the slot must
    // outlive the wait (a member, not a local: a local's slot was written after split returned,
    // and the split always "gave" null, on the first H100 run), and is read only once the
    // parent left ncclInProgress.
    std::atomic_ref<ncclComm_t> slot(split_slot_);
    slot.store(nullptr);
    const ncclResult_t status =
        nccl().CommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &split_slot_, &config);
    if (status != ncclSuccess && status != ncclInProgress)
      check_nccl(status, "ncclCommSplit", comm_);
    const Deadline deadline = Deadline::after(timeout);
    // The parent is busy until every rank joined and the child's init job ended; then the child
    // (when this rank has a color) may still be finishing its own init.
    ncclResult_t state = poll_state(comm_, deadline, [this] { return aborted_.load(); });
    // Once the parent left ncclInProgress NCCL's job is over and the slot holds what it made
    // (aborted on every way out but success).
    PendingComm child(state == ncclInProgress ? nullptr : slot.exchange(nullptr));
    if (state == ncclSuccess && child) state = poll_state(child.get(), deadline);
    if (aborted_.load()) {
      abort_locked();
      throw make_error(ErrorCode::kAborted,
                       "ncclCommSplit: the communicator was aborted meanwhile");
    }
    if (state == ncclInProgress) {
      // The parent cannot leave the split it is stuck in: abort it too (which also ends NCCL's
      // init job, so nothing writes split_slot_ afterwards).
      abort_locked();
      aborted_.store(true);
      throw make_error(ErrorCode::kTimeout,
                       "ncclCommSplit: rank {} of {} (color {}) waited {} ms for the other ranks "
                       "to split too; aborted the communicator. Every rank of it must call split; "
                       "raise the timeout if some are slow to arrive",
                       rank_, size_, color, timeout.count());
    }
    if (state != ncclSuccess)
      throw make_error(ErrorCode::kDevice, "ncclCommSplit failed: {}; NCCL_DEBUG=WARN shows why",
                       nccl_detail(state, child ? child.get() : comm_));
    if (color < 0) return nullptr;
    if (!child)
      throw make_error(ErrorCode::kDevice,
                       "ncclCommSplit: rank {} of {} (color {}) finished the split but NCCL "
                       "gave it no communicator; NCCL_DEBUG=WARN shows why",
                       rank_, size_, color);
    return std::make_unique<CudaNcclComm>(std::move(child), device_, timeout_);
  }

 private:
  // The communicator, unless aborted (then Error(kAborted)). Called with mutex_ held.
  ncclComm_t live(std::string_view call) {
    if (aborted_.load())
      throw make_error(ErrorCode::kAborted, "{}: the NCCL communicator was aborted; make a new one",
                       call);
    return comm_;
  }

  void abort_locked() noexcept {
    if (comm_ == nullptr) return;
    (void)cudaSetDevice(device_);
    (void)nccl().CommAbort(comm_);
    comm_ = nullptr;
    pending_ops_.clear();  // they died with the communicator
  }

  ncclDataType_t data_type(DataType type, std::string_view call) const {
    if (const auto t = nccl_type(type)) return *t;
    throw make_error(ErrorCode::kInvalidArgument, "{}: NCCL has no data type for {}", call,
                     to_string(type));
  }

  // One NCCL enqueue: on the comm's device, then (outside a group) waited out of ncclInProgress.
  template <typename F>
  void call(std::string_view name, F&& enqueue) {
    std::unique_lock lock(mutex_);
    ncclComm_t comm = live(name);
    set_device_for(device_, name);
    const ncclResult_t status = enqueue(comm);
    if (status != ncclSuccess && status != ncclInProgress) check_nccl(status, name, comm);
    if (group_depth_ == 0) settle(lock, name);
  }

  template <typename F>
  void reduction(std::string_view name, DataType type, ReduceOp op, double scale, F&& enqueue) {
    const ncclDataType_t t = data_type(type, name);
    const auto plain = nccl_op(type, op);
    if (!plain)
      throw make_error(ErrorCode::kInvalidArgument,
                       "{}: NCCL does not reduce data type {} with op {} (ask supports() first)",
                       name, to_string(type), to_string(op));
    if (scale == 1.0) {
      call(name, [&](ncclComm_t comm) { return enqueue(comm, t, *plain); });
      return;
    }
    if (op != ReduceOp::kSum && op != ReduceOp::kAvg)
      throw make_error(ErrorCode::kInvalidArgument, "{}: a scale applies to sum and avg only",
                       name);
    // avg with a scale is a sum whose inputs are multiplied by scale / size.
    const double factor = op == ReduceOp::kAvg ? scale / size_ : scale;
    Scalar scalar;
    switch (type) {
      case DataType::kFloat32:
        scalar.f32 = static_cast<float>(factor);
        break;
      case DataType::kFloat64:
        scalar.f64 = factor;
        break;
      case DataType::kFloat16:
        scalar.f16 = __double2half(factor);
        break;
      case DataType::kBFloat16:
        scalar.bf16 = __double2bfloat16(factor);
        break;
      default:
        throw make_error(ErrorCode::kInvalidArgument,
                         "{}: a scale applies to floating types only (not {})", name,
                         to_string(type));
    }
    call(name, [&](ncclComm_t comm) {
      ncclRedOp_t premul{};
      const ncclResult_t created =
          nccl().RedOpCreatePreMulSum(&premul, &scalar, t, ncclScalarHostImmediate, comm);
      if (created != ncclSuccess) return created;
      const ncclResult_t status = enqueue(comm, t, premul);
      // NCCL allows destroying the op once the call that uses it returned, but inside a group
      // that call is ncclGroupEnd: the op lives until then.
      if (group_depth_ > 0)
        pending_ops_.push_back(premul);
      else
        (void)nccl().RedOpDestroy(premul, comm);
      return status;
    });
  }

  void destroy_pending_ops() {
    for (ncclRedOp_t op : pending_ops_) (void)nccl().RedOpDestroy(op, comm_);
    pending_ops_.clear();
  }

  // Waits (bounded by the comm's timeout) until NCCL finished the call that returned, polling
  // without holding the mutex so that abort() from another thread gets in.
  void settle(std::unique_lock<std::mutex>& lock, std::string_view name) {
    const Deadline deadline = Deadline::after(timeout_);
    for (int polls = 0;; ++polls) {
      ncclComm_t comm = live(name);
      ncclResult_t state = ncclSuccess;
      const ncclResult_t status = nccl().CommGetAsyncError(comm, &state);
      if (status != ncclSuccess) check_nccl(status, "ncclCommGetAsyncError", comm);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress)
        throw make_error(ErrorCode::kDevice,
                         "{} failed: {}; the communicator is broken (a peer failed or the network "
                         "broke): abort it and make a new one",
                         name, nccl_detail(state, comm));
      if (deadline.expired()) {
        abort_locked();
        aborted_.store(true);
        throw make_error(ErrorCode::kTimeout,
                         "{}: rank {} of {} waited {} ms for NCCL to take the call; aborted the "
                         "communicator. A peer is missing or stuck",
                         name, rank_, size_, timeout_.count());
      }
      // As poll_state: an enqueue usually settles within microseconds; a first call that sets up
      // connections takes longer and should not keep a core spinning.
      lock.unlock();
      if (polls < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lock.lock();
    }
  }

  std::mutex mutex_;
  ncclComm_t comm_ = nullptr;  // null once aborted
  std::atomic<bool> aborted_{false};
  int device_;
  std::chrono::milliseconds timeout_;
  int rank_ = -1;
  int size_ = 0;
  int group_depth_ = 0;
  std::vector<ncclRedOp_t> pending_ops_;
  // Where NCCL's split job writes the child communicator (see split()); read through atomic_ref,
  // since that store comes from NCCL's thread (an __atomic release store).
  alignas(std::atomic_ref<ncclComm_t>::required_alignment) ncclComm_t split_slot_ = nullptr;
};

}  // namespace

std::unique_ptr<NcclComm> init_nccl_comm(const UniqueId& id, int nranks, int rank, int device,
                                         std::chrono::milliseconds timeout) {
  set_device_for(device, "ncclCommInitRankConfig");
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof unique);
  ncclConfig_t config = non_blocking_config();
  ncclComm_t raw = nullptr;
  const ncclResult_t status = nccl().CommInitRankConfig(&raw, nranks, unique, rank, &config);
  PendingComm comm(raw);
  if (status != ncclSuccess && status != ncclInProgress)
    check_nccl(status, "ncclCommInitRankConfig", raw,
               "check NCCL_DEBUG=WARN output; every rank must pass the same id and world size");
  const ncclResult_t state = poll_state(comm.get(), Deadline::after(timeout));
  if (state == ncclInProgress)
    throw make_error(ErrorCode::kTimeout,
                     "ncclCommInitRankConfig: rank {} of {} (device {}) waited {} ms for the other "
                     "ranks to join; aborted. Check that every rank reaches init, that hosts reach "
                     "each other (NCCL_SOCKET_IFNAME), or raise the timeout",
                     rank, nranks, device, timeout.count());
  if (state != ncclSuccess)
    throw make_error(ErrorCode::kDevice,
                     "ncclCommInitRankConfig failed on rank {} of {} (device {}): {}; "
                     "NCCL_DEBUG=WARN shows NCCL's own account",
                     rank, nranks, device, nccl_detail(state, comm.get()));
  return std::make_unique<CudaNcclComm>(std::move(comm), device, timeout);
}

}  // namespace tutti::device::cuda
