// Peers tutti-bench can time side by side with tutti's allreduce (--baseline
// mpi|gloo|nccl|inplace): the same ranks, the same buffer, the same sizes, interleaved. Each
// outside peer is optional at build time (TUTTI_WITH_MPI, TUTTI_WITH_GLOO, TUTTI_WITH_CUDA for
// nccl); asking for one that was not built is a clear error. inplace (tutti's own in-place
// allreduce) is always there.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tutti/tutti.hpp"

namespace tutti::bench {

enum class BaselineKind { kNone, kMpi, kGloo, kNccl, kInPlace };

std::string_view baseline_name(BaselineKind kind);
std::optional<BaselineKind> parse_baseline(const std::string& name);
bool baseline_built(BaselineKind kind);
// Why `kind` is not available in this build and how to get it; "" when it is.
std::string baseline_missing_reason(BaselineKind kind);

// One peer's allreduce, connected among the ranks of a tutti world.
class Baseline {
 public:
  virtual ~Baseline() = default;
  // What runs, e.g. "Open MPI v4.1.4, MPI_Allreduce" or "Gloo ring_chunked, tcp on 127.0.0.1".
  virtual std::string description() const = 0;
  virtual bool supports(DataType type, ReduceOp op) const = 0;
  // Called by every rank before timing `count` elements at `buf`, so set-up (Gloo builds an
  // algorithm per buffer) stays out of the timed loop. Collective: all ranks call it in step.
  virtual void prepare(void* buf, size_t count, DataType type, ReduceOp op) = 0;
  // In place, like a gradient allreduce: buf holds this rank's input and receives the result.
  virtual void allreduce(void* buf, size_t count, DataType type, ReduceOp op) = 0;
  // Out of place: the peer reads send and writes recv (MPI_Allreduce without MPI_IN_PLACE,
  // ncclAllReduce with two buffers, gloo::allreduce with an input and an output), so that
  // tutti's out-of-place column has a peer of its own kind.
  virtual void allreduce_out_of_place(const void* send, void* recv, size_t count, DataType type,
                                      ReduceOp op) = 0;
  // Whether the out-of-place call leaves a result that the bench can check (false for a peer
  // that runs in place on recv instead: its #wrong is then N/A).
  virtual bool checks_out_of_place() const { return true; }
};

// Work a peer must do before tutti::init() (MPI_Init, and handing tutti a store address when the
// job was started by mpirun without one). Destroy it after tutti::finalize().
class BaselineSession {
 public:
  virtual ~BaselineSession() = default;
  // After tutti::init(): the peer, connected among the same ranks as `comm`.
  virtual std::unique_ptr<Baseline> connect(Communicator& comm) = 0;
  // After an error on this rank: end the whole job if the peer would otherwise hang in teardown
  // (MPI_Abort); a no-op for peers without such a teardown.
  virtual void abort_job(int /*code*/) noexcept {}
};

// Throws tutti::Error (kInvalidArgument) when `kind` was not built in; see baseline_missing_reason.
std::unique_ptr<BaselineSession> start_baseline_session(BaselineKind kind);

}  // namespace tutti::bench
