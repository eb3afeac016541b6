#include "device/cuda/nccl_library.hpp"

#include <dlfcn.h>

#include <mutex>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/shared_library.hpp"

namespace tutti::device::cuda {
namespace {

// Whether the process already has NCCL's symbols: then they are the ones to use.
bool already_loaded() {
  return dlsym(RTLD_DEFAULT, "ncclCommInitRankConfig") != nullptr;
}

// RTLD_GLOBAL: a later library (torch's libtorch_cuda) that needs NCCL then binds to this same
// one instead of loading a second copy.
SharedLibrary open_nccl() {
  if (already_loaded()) return SharedLibrary::process("the NCCL already loaded in this process");
  static constexpr const char* kNames[] = {
      "libnccl.so.2",
#ifdef TUTTI_NCCL_BUILD_LIBRARY
      TUTTI_NCCL_BUILD_LIBRARY,
#endif
  };
  return SharedLibrary(kNames, SharedLibrary::Scope::kGlobal);
}

NcclLibrary load() {
  SharedLibrary library = open_nccl();
  if (!library.loaded())
    throw make_error(ErrorCode::kDevice,
                     "NCCL could not be loaded ({}): device collectives need it; install NCCL "
                     "(a pip nvidia-nccl package or libnccl2) and put its lib folder on "
                     "LD_LIBRARY_PATH",
                     library.load_errors());
  NcclLibrary lib{};
  library.bind("ncclGetVersion", lib.GetVersion);
  library.bind("ncclGetErrorString", lib.GetErrorString);
  library.bind("ncclGetLastError", lib.GetLastError);
  library.bind("ncclGetUniqueId", lib.GetUniqueId);
  library.bind("ncclCommInitRankConfig", lib.CommInitRankConfig);
  library.bind("ncclCommSplit", lib.CommSplit);
  library.bind("ncclCommGetAsyncError", lib.CommGetAsyncError);
  library.bind("ncclCommUserRank", lib.CommUserRank);
  library.bind("ncclCommCount", lib.CommCount);
  library.bind("ncclCommFinalize", lib.CommFinalize);
  library.bind("ncclCommDestroy", lib.CommDestroy);
  library.bind("ncclCommAbort", lib.CommAbort);
  library.bind("ncclGroupStart", lib.GroupStart);
  library.bind("ncclGroupEnd", lib.GroupEnd);
  library.bind("ncclAllReduce", lib.AllReduce);
  library.bind("ncclReduceScatter", lib.ReduceScatter);
  library.bind("ncclAllGather", lib.AllGather);
  library.bind("ncclBroadcast", lib.Broadcast);
  library.bind("ncclSend", lib.Send);
  library.bind("ncclRecv", lib.Recv);
  library.bind("ncclRedOpCreatePreMulSum", lib.RedOpCreatePreMulSum);
  library.bind("ncclRedOpDestroy", lib.RedOpDestroy);
  if (!library.missing().empty())
    throw make_error(ErrorCode::kDevice,
                     "the NCCL found ({}) lacks {}: tutti needs NCCL 2.18 or later; put a newer "
                     "one's lib folder first on LD_LIBRARY_PATH",
                     library.name(), library.missing());
  library.keep_loaded();
  int version = 0;
  if (lib.GetVersion(&version) == ncclSuccess)
    log::debug("NCCL {}.{}.{} from {}", version / 10000, version / 100 % 100, version % 100,
               library.name());
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
