// A stand-in for NCCL's C API and the few CUDA runtime calls device/cuda/nccl_comm.cc makes, so
// that the real CudaNcclComm runs on a machine without a GPU. It keeps NCCL's non-blocking
// protocol, where the tutti code it serves went wrong on the first H100 run:
// - ncclCommInitRankConfig and ncclCommSplit with config.blocking = 0 return ncclInProgress; the
//   communicator's state (ncclCommGetAsyncError) stays ncclInProgress until a background thread
//   finished the work, a while later;
// - ncclCommSplit sets *newcomm to null and writes the child there only when the split completed
//   (from that thread, with a release store), as NCCL's init job does, and the child itself stays
//   in progress a little longer;
// - a call on a communicator whose state is not ncclSuccess fails ("Attempt to use communicator
//   before the previous operation returned ncclSuccess");
// - the first data call of a communicator answers ncclInProgress (its connections are made
//   lazily) and completes a while later;
// - two ranks of one communicator on the same device of the same host make every rank's init
//   fail (ncclInvalidUsage, "Duplicate GPU detected");
// - a split that some rank never joins stays in progress until the communicator is aborted.
// Ranks are threads of one process; data calls move no data (the control plane is under test).
#pragma once

#include <string>

namespace tutti::testing::fake_nccl {

// The calling thread's host, as NCCL_HOSTID would name it (default "localhost").
void set_host(std::string host);
// How many devices cudaSetDevice accepts (default 8).
void set_device_count(int count);
// Communicators made so far (init and split), for the tests' checks.
int communicators_made();

}  // namespace tutti::testing::fake_nccl
