// NCCL, found the first time a device communicator needs it rather than when libtutti loads. A
// CPU job never loads it; and a process that already holds an NCCL (PyPI's torch loads its own,
// newer one) keeps that one: a libtutti linked against the system's libnccl.so.2 took that soname
// first when imported first, and torch's import then failed on a symbol only its NCCL has
// (`import tutti; import torch` in one Python).
#pragma once

#include <nccl.h>

namespace tutti::device::cuda {

// The NCCL entry points tutti calls, named without their `nccl` prefix.
struct NcclLibrary {
  decltype(&::ncclGetVersion) GetVersion;
  decltype(&::ncclGetErrorString) GetErrorString;
  decltype(&::ncclGetLastError) GetLastError;
  decltype(&::ncclGetUniqueId) GetUniqueId;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig;
  decltype(&::ncclCommSplit) CommSplit;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError;
  decltype(&::ncclCommUserRank) CommUserRank;
  decltype(&::ncclCommCount) CommCount;
  decltype(&::ncclCommFinalize) CommFinalize;
  decltype(&::ncclCommDestroy) CommDestroy;
  decltype(&::ncclCommAbort) CommAbort;
  decltype(&::ncclGroupStart) GroupStart;
  decltype(&::ncclGroupEnd) GroupEnd;
  decltype(&::ncclAllReduce) AllReduce;
  decltype(&::ncclReduceScatter) ReduceScatter;
  decltype(&::ncclAllGather) AllGather;
  decltype(&::ncclBroadcast) Broadcast;
  decltype(&::ncclSend) Send;
  decltype(&::ncclRecv) Recv;
  decltype(&::ncclRedOpCreatePreMulSum) RedOpCreatePreMulSum;
  decltype(&::ncclRedOpDestroy) RedOpDestroy;
};

// The process's NCCL, found once: the one already loaded (its symbols are in the global scope:
// torch's, or one the program links), else libnccl.so.2 through the loader's search
// (LD_LIBRARY_PATH, libtutti's RUNPATH, ld.so.cache), else the one this libtutti was built against.
// Error(kDevice) naming where it looked, or the entry points a found NCCL lacks (tutti needs 2.18
// or later).
const NcclLibrary& nccl();

}  // namespace tutti::device::cuda
