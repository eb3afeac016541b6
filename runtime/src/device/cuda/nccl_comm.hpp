// device::NcclComm over an ncclComm_t, always in NCCL's non-blocking mode: every NCCL call returns
// at once (possibly ncclInProgress) and tutti polls ncclCommGetAsyncError against a deadline, so a
// peer that never arrives costs a timeout and an abort, never a hung process.
#pragma once

#include <chrono>
#include <memory>

#include "device/device_api.hpp"

namespace tutti::device::cuda {

// ncclCommInitRankConfig (non-blocking) on `device`, polled until done. Error(kTimeout) after
// aborting when the other ranks did not join within `timeout`; Error(kDevice) when CUDA or NCCL
// failed. The same `timeout` later bounds each call's wait for NCCL to leave ncclInProgress.
std::unique_ptr<NcclComm> init_nccl_comm(const UniqueId& id, int nranks, int rank, int device,
                                         std::chrono::milliseconds timeout);

}  // namespace tutti::device::cuda
