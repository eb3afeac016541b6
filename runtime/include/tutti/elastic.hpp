// Elastic training (docs/ELASTIC.md): the state a job rolls back to when ranks die, and a loop that
// goes on with the survivors. Horovod elastic's model (State commit/restore/sync, elastic.run) on
// tutti's Communicator::shrink.
//
//   std::vector<float> weights(n);
//   int64_t step = 0;
//   tutti::elastic::State state;
//   state.add("weights", std::span<float>(weights));
//   state.add("step", std::span<int64_t>(&step, 1));
//   state.commit();
//   tutti::Communicator last = tutti::elastic::run(world.communicator(), state,
//       [&](const tutti::Communicator& comm) {
//         for (; step < steps; ++step) {
//           train_step(comm, weights);          // allreduces on comm
//           if (step % 10 == 0) state.commit();  // what a failure rolls back to
//         }
//       });
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tutti/tutti.hpp"

namespace tutti::elastic {

// Thrown by State::commit() inside run() when the launcher (tuttirun --max-np) published a new
// membership: ranks joined the job. Every member throws it at the same commit (rank 0 reads the
// store and tells the others), and run() catches it, regroups with the newcomers and syncs them.
class TUTTI_CXX_API MembershipChanged : public std::exception {
 public:
  explicit MembershipChanged(int64_t epoch);
  int64_t epoch() const { return epoch_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  int64_t epoch_;
  std::string what_;
};

struct RunOptions;

// Host buffers registered by name, with a copy of each taken at every commit(). The buffers must
// outlive the State and keep their size.
class TUTTI_CXX_API State {
 public:
  State() = default;
  virtual ~State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Registers `bytes` under `name` (unique). Error(kInvalidArgument) for a name used twice.
  void add(const std::string& name, std::span<std::byte> bytes);
  template <typename T>
  void add(const std::string& name, std::span<T> values) {
    static_assert(std::is_trivially_copyable_v<T>, "elastic::State holds plain data");
    add(name, std::as_writable_bytes(values));
  }
  // Copies every buffer: what restore() goes back to. Cheap enough to call every few steps (a
  // memcpy of the state); the first commit is the starting point. Inside run() of an elastic job
  // (tuttirun --max-np) it also asks whether ranks joined (one 8-byte broadcast) and throws
  // MembershipChanged, after the copy, when they did.
  // (commit, restore and sync are virtual: a state of other things, the libtorch binding's
  // TorchState, adds its own to these.)
  virtual void commit();
  // Copies the last commit back into the buffers (Error(kInvalidArgument) before any commit).
  virtual void restore();
  // Every rank's buffers become `root`'s (one broadcast per buffer), and its commit too: after a
  // shrink the survivors agree on one state even when they had committed different steps.
  virtual void sync(const Communicator& comm, int root = 0);
  // Runs after each reset (shrink, restore, sync), before the work is called again: repartition
  // data, rebuild optimizers, log. Called in the order added.
  void on_reset(std::function<void(const Communicator&)> callback);
  uint64_t commits() const { return commits_; }
  // For run(): the reset callbacks, in order.
  void reset(const Communicator& comm) const;

 private:
  struct Entry {
    std::string name;
    std::span<std::byte> bytes;
    std::vector<std::byte> committed;
  };
  friend Communicator run(Communicator, State&, const std::function<void(const Communicator&)>&,
                          const RunOptions&);
  void check_membership() const;

  std::vector<Entry> entries_;
  const Communicator* watched_ = nullptr;  // run()'s communicator, in an elastic job
  int64_t epoch_ = 0;                      // the membership watched_ belongs to
  std::vector<std::function<void(const Communicator&)>> callbacks_;
  uint64_t commits_ = 0;
};

struct RunOptions {
  // How many times the ranks may shrink before run() gives up and rethrows (default: as often as
  // ranks die; the job's --min-np bounds it).
  int max_resets = 1 << 30;
  // Fewer ranks than this left: run() rethrows the failure instead of going on.
  int min_size = 1;
  // In an elastic job (tuttirun --host-discovery-script --min-np N), when a shrink leaves fewer
  // ranks than this, run() waits up to wait_timeout for the launcher to add ranks (it regroups
  // with them) before it calls work again; then Error(kTimeout). -1: TUTTI_ELASTIC_MIN_NP (set by
  // tuttirun), and TUTTI_ELASTIC_TIMEOUT.
  int wait_for_size = -1;
  std::chrono::milliseconds wait_timeout{-1};
};

// Calls work(comm) until it returns. When a call inside it fails because ranks died, aborted or
// stopped answering (Error kPeerFailure, kAborted, kTimeout), the survivors shrink the
// communicator, restore `state` to its last commit, sync it from the shrunk communicator's rank 0,
// run the reset callbacks and call work again with the shrunk communicator. A rank that dies or
// stops answering during that recovery (the shrink, the sync, a callback) makes them shrink again,
// as often as needed. Below the job's --min-np (TUTTI_ELASTIC_MIN_NP) a job that cannot grow fails
// at once with the failure's code, before another step. Any other error (a bug, a mismatch, a bad
// argument) is rethrown.
// In an elastic job (tuttirun --max-np) ranks may also join: a commit() throws
// MembershipChanged, and every member regroups with the newcomers (Communicator::regroup), syncs
// the state from rank 0 and runs the callbacks; a process the launcher started into a running
// job takes the state from rank 0 before its first work call instead.
// Returns the communicator the work finished on. The state must have been committed once.
TUTTI_CXX_API Communicator run(Communicator comm, State& state,
                               const std::function<void(const Communicator&)>& work,
                               const RunOptions& options = {});

}  // namespace tutti::elastic
