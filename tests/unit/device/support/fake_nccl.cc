// The NCCL and CUDA runtime stand-in of fake_nccl.hpp. Written from NCCL's documented
// non-blocking semantics (ncclConfig_t.blocking = 0, ncclCommGetAsyncError, ncclCommSplit).
#include "tests/unit/device/support/fake_nccl.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

struct Group;

}  // namespace

struct ncclComm {
  std::atomic<ncclResult_t> state{ncclInProgress};
  int rank = 0;
  int nranks = 0;
  int device = 0;
  std::string host;
  std::shared_ptr<Group> group;
  std::atomic<bool> aborted{false};
  bool connected = false;  // its first data call made the connections
  int splits = 0;          // splits started on it (NCCL's splitCount)
};

namespace {

using namespace std::chrono_literals;

// The ranks of one communicator, and the splits they are in.
struct Split {
  struct Member {
    int color;
    int key;
    ncclComm_t parent;
    ncclComm_t* slot;
  };
  std::map<int, Member> members;  // by parent rank
};

struct Group {
  std::vector<ncclComm_t> members;
  std::map<int, Split> splits;  // by split number
};

std::mutex g_mutex;
std::vector<std::unique_ptr<ncclComm>> g_comms;           // every communicator, until exit
std::map<std::string, std::shared_ptr<Group>> g_joining;  // by unique id, until complete
std::vector<std::thread> g_threads;                       // background work, joined at exit
std::string g_last_error;
int g_devices = 8;
thread_local std::string t_host = "localhost";
thread_local int t_device = 0;

// Joins the background threads when the process ends, so that none outlives what it uses.
struct Joiner {
  ~Joiner() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(g_mutex);
      threads.swap(g_threads);
    }
    for (auto& t : threads) t.join();
  }
} g_joiner;

// Runs `work` on a background thread after `delay`, as NCCL's init and connection jobs do.
template <typename F>
void later(std::chrono::milliseconds delay, F work) {
  std::lock_guard lock(g_mutex);
  g_threads.emplace_back([delay, work = std::move(work)]() mutable {
    std::this_thread::sleep_for(delay);
    work();
  });
}

ncclResult_t usage(const std::string& message) {
  std::lock_guard lock(g_mutex);
  g_last_error = message;
  return ncclInvalidUsage;
}

// NCCL's check before any call: a communicator still in an earlier operation is refused.
ncclResult_t ready(ncclComm_t comm) {
  if (comm == nullptr) return usage("null communicator");
  if (comm->aborted.load()) return usage("communicator was aborted");
  const ncclResult_t state = comm->state.load();
  if (state == ncclInProgress)
    return usage("Attempt to use communicator before the previous operation returned ncclSuccess");
  return state;
}

ncclComm_t make_comm() {
  std::lock_guard lock(g_mutex);
  g_comms.push_back(std::make_unique<ncclComm>());
  return g_comms.back().get();
}

// A data call: the first one on a communicator answers in progress while its connections form.
ncclResult_t data_call(ncclComm_t comm) {
  if (const ncclResult_t r = ready(comm); r != ncclSuccess) return r;
  if (comm->connected) return ncclSuccess;
  comm->connected = true;
  comm->state = ncclInProgress;
  later(5ms, [comm] {
    if (!comm->aborted.load()) comm->state = ncclSuccess;
  });
  return ncclInProgress;
}

}  // namespace

namespace tutti::testing::fake_nccl {

void set_host(std::string host) {
  t_host = std::move(host);
}

void set_device_count(int count) {
  std::lock_guard lock(g_mutex);
  g_devices = count;
}

int communicators_made() {
  std::lock_guard lock(g_mutex);
  return static_cast<int>(g_comms.size());
}

}  // namespace tutti::testing::fake_nccl

extern "C" {

// ---- CUDA runtime ----

cudaError_t cudaSetDevice(int device) {
  std::lock_guard lock(g_mutex);
  if (device < 0 || device >= g_devices) return cudaErrorInvalidDevice;
  t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  return cudaSuccess;
}

const char* cudaGetErrorName(cudaError_t status) {
  return status == cudaSuccess ? "cudaSuccess" : "cudaErrorInvalidDevice";
}

const char* cudaGetErrorString(cudaError_t status) {
  return status == cudaSuccess ? "no error" : "invalid device ordinal";
}

// ---- NCCL ----
// libtutti finds these by name in the process (device/cuda/nccl_library.cc: dlsym), as it finds a
// real NCCL that is already loaded: the test executable exports them (ENABLE_EXPORTS).

ncclResult_t ncclGetVersion(int* version) {
  *version = 22809;  // the 2.28.9 an H100 host ran
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof *id);
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) {
  static thread_local std::string copy;
  std::lock_guard lock(g_mutex);
  copy = g_last_error;
  return copy.c_str();
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* newcomm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  if (newcomm == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  ncclComm_t comm = make_comm();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = t_device;
  comm->host = t_host;
  *newcomm = comm;  // unlike a split's child, set at once: its state is what the caller polls
  const std::string key(id.internal, sizeof id.internal);
  std::shared_ptr<Group> complete;
  {
    std::lock_guard lock(g_mutex);
    auto& group = g_joining[key];
    if (!group) group = std::make_shared<Group>();
    group->members.resize(static_cast<size_t>(nranks), nullptr);
    group->members[static_cast<size_t>(rank)] = comm;
    comm->group = group;
    if (std::count(group->members.begin(), group->members.end(), nullptr) == 0) {
      complete = group;
      g_joining.erase(key);
    }
  }
  if (complete) {
    later(10ms, [complete] {
      // NCCL's init exchanges every rank's host and device, and refuses duplicates everywhere.
      std::string duplicate;
      for (ncclComm_t a : complete->members)
        for (ncclComm_t b : complete->members)
          if (a->rank < b->rank && a->host == b->host && a->device == b->device)
            duplicate = "Duplicate GPU detected : rank " + std::to_string(a->rank) + " and rank " +
                        std::to_string(b->rank) + " both on CUDA device " +
                        std::to_string(a->device);
      if (!duplicate.empty()) usage(duplicate);
      for (ncclComm_t c : complete->members)
        c->state = duplicate.empty() ? ncclSuccess : ncclInvalidUsage;
    });
  }
  if (config != nullptr && config->blocking == 0) return ncclInProgress;
  while (comm->state.load() == ncclInProgress) std::this_thread::sleep_for(1ms);
  return comm->state.load();
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t*) {
  if (const ncclResult_t r = ready(comm); r != ncclSuccess) return r;
  if (newcomm == nullptr) return ncclInvalidArgument;
  *newcomm = nullptr;  // null until the split completed
  comm->state = ncclInProgress;
  const int number = comm->splits++;
  std::shared_ptr<Group> group = comm->group;
  bool all_in = false;
  {
    std::lock_guard lock(g_mutex);
    Split& split = group->splits[number];
    split.members[comm->rank] = {color, key, comm, newcomm};
    all_in = split.members.size() == group->members.size();
  }
  if (all_in) {
    later(10ms, [group, number] {
      Split split;
      {
        std::lock_guard lock(g_mutex);
        split = group->splits[number];
        group->splits.erase(number);
      }
      std::map<int, std::vector<std::tuple<int, int, const Split::Member*>>> by_color;
      for (const auto& [rank, m] : split.members)
        if (m.color != NCCL_SPLIT_NOCOLOR) by_color[m.color].emplace_back(m.key, rank, &m);
      for (auto& [color, list] : by_color) {
        std::sort(list.begin(), list.end());
        auto child_group = std::make_shared<Group>();
        for (size_t i = 0; i < list.size(); ++i) {
          const Split::Member* m = std::get<2>(list[i]);
          ncclComm_t child = make_comm();
          child->rank = static_cast<int>(i);
          child->nranks = static_cast<int>(list.size());
          child->device = m->parent->device;
          child->host = m->parent->host;
          child->group = child_group;
          // Written to the caller's slot while still finishing its own init: the caller must
          // poll the child too before using it.
          child->state = ncclInProgress;
          later(5ms, [child] {
            if (!child->aborted.load()) child->state = ncclSuccess;
          });
          child_group->members.push_back(child);
          __atomic_store_n(m->slot, child, __ATOMIC_RELEASE);
        }
      }
      for (const auto& [rank, m] : split.members)
        if (!m.parent->aborted.load()) m.parent->state = ncclSuccess;
    });
  }
  return ncclInProgress;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (comm == nullptr || async_error == nullptr) return ncclInvalidArgument;
  *async_error = comm->state.load();
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (const ncclResult_t r = ready(comm); r != ncclSuccess) return r;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (const ncclResult_t r = ready(comm); r != ncclSuccess) return r;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (const ncclResult_t r = ready(comm); r != ncclSuccess) return r;
  comm->state = ncclInProgress;
  later(2ms, [comm] { comm->state = ncclSuccess; });
  return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  comm->aborted = true;  // freed at exit; any later use is refused
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->aborted = true;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t comm,
                           cudaStream_t) {
  return data_call(comm);
}

ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                               ncclComm_t comm, cudaStream_t) {
  return data_call(comm);
}

ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t comm,
                           cudaStream_t) {
  return data_call(comm);
}

ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm,
                           cudaStream_t) {
  return data_call(comm);
}

ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return data_call(comm);
}

ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return data_call(comm);
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void*, ncclDataType_t, ncclScalarResidence_t,
                                      ncclComm_t comm) {
  if (const ncclResult_t r = ready(comm); r != ncclSuccess) return r;
  *op = static_cast<ncclRedOp_t>(ncclNumOps);
  return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t) {
  return ncclSuccess;
}

}  // extern "C"
