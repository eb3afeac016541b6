#include "device/cuda/nccl_library.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::device::cuda {
namespace {

// Whether the process already has NCCL's symbols: then they are the ones to use.
bool already_loaded() {
  return dlsym(RTLD_DEFAULT, "ncclCommInitRankConfig") != nullptr;
}

template <typename Pointer>
void bind(void* handle, const char* name, Pointer& slot, std::string& missing) {
  slot = reinterpret_cast<Pointer>(dlsym(handle, name));
  if (slot == nullptr) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", name);
}

NcclLibrary load() {
  void* handle = RTLD_DEFAULT;
  std::string where = "the NCCL already loaded in this process";
  if (!already_loaded()) {
    // RTLD_GLOBAL: a later library (torch's libtorch_cuda) that needs NCCL then binds to this
    // same one instead of loading a second copy.
    handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    where = "libnccl.so.2";
    std::string first_error = handle == nullptr ? dlerror() : "";
#ifdef TUTTI_NCCL_BUILD_LIBRARY
    if (handle == nullptr) {
      handle = dlopen(TUTTI_NCCL_BUILD_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
      where = TUTTI_NCCL_BUILD_LIBRARY;
    }
#endif
    if (handle == nullptr)
      throw make_error(ErrorCode::kDevice,
                       "NCCL could not be loaded ({}): device collectives need it; install NCCL "
                       "(a pip nvidia-nccl package or libnccl2) and put its lib folder on "
                       "LD_LIBRARY_PATH",
                       first_error);
  }
  NcclLibrary lib{};
  std::string missing;
  bind(handle, "ncclGetVersion", lib.GetVersion, missing);
  bind(handle, "ncclGetErrorString", lib.GetErrorString, missing);
  bind(handle, "ncclGetLastError", lib.GetLastError, missing);
  bind(handle, "ncclGetUniqueId", lib.GetUniqueId, missing);
  bind(handle, "ncclCommInitRankConfig", lib.CommInitRankConfig, missing);
  bind(handle, "ncclCommSplit", lib.CommSplit, missing);
  bind(handle, "ncclCommGetAsyncError", lib.CommGetAsyncError, missing);
  bind(handle, "ncclCommUserRank", lib.CommUserRank, missing);
  bind(handle, "ncclCommCount", lib.CommCount, missing);
  bind(handle, "ncclCommFinalize", lib.CommFinalize, missing);
  bind(handle, "ncclCommDestroy", lib.CommDestroy, missing);
  bind(handle, "ncclCommAbort", lib.CommAbort, missing);
  bind(handle, "ncclGroupStart", lib.GroupStart, missing);
  bind(handle, "ncclGroupEnd", lib.GroupEnd, missing);
  bind(handle, "ncclAllReduce", lib.AllReduce, missing);
  bind(handle, "ncclReduceScatter", lib.ReduceScatter, missing);
  bind(handle, "ncclAllGather", lib.AllGather, missing);
  bind(handle, "ncclBroadcast", lib.Broadcast, missing);
  bind(handle, "ncclSend", lib.Send, missing);
  bind(handle, "ncclRecv", lib.Recv, missing);
  bind(handle, "ncclRedOpCreatePreMulSum", lib.RedOpCreatePreMulSum, missing);
  bind(handle, "ncclRedOpDestroy", lib.RedOpDestroy, missing);
  if (!missing.empty())
    throw make_error(ErrorCode::kDevice,
                     "the NCCL found ({}) lacks {}: tutti needs NCCL 2.18 or later; put a newer "
                     "one's lib folder first on LD_LIBRARY_PATH",
                     where, missing);
  int version = 0;
  if (lib.GetVersion(&version) == ncclSuccess)
    log::debug("NCCL {}.{}.{} from {}", version / 10000, version / 100 % 100, version % 100, where);
  return lib;
}

}  // namespace

const NcclLibrary& nccl() {
  // Not a function-local static initialized by load(): a failed load must throw to every caller,
  // and be tried again by the next one (LD_LIBRARY_PATH cannot change, but the error must not be
  // swallowed into a half-made library).
  static std::mutex mutex;
  static NcclLibrary library{};
  static bool loaded = false;
  std::lock_guard lock(mutex);
  if (!loaded) {
    library = load();
    loaded = true;
  }
  return library;
}

}  // namespace tutti::device::cuda
