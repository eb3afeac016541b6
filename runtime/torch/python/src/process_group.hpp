// ProcessGroupTutti: torch.distributed's backend "tutti", one per process group: a
// c10d::ProcessGroup subclass on PyTorch 1.13, a c10d::Backend subclass on 2.x (torch_api.hpp).
// Each group owns one tutti Communicator, made on the group's store, and one Worker thread that
// runs the group's operations in the order torch issued them; every operation returns a TuttiWork
// at once (see work.hpp) and runs on that thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "torch_api.hpp"
#include "tutti/tutti.hpp"
#include "work.hpp"
#include "worker.hpp"

namespace tutti::torch_backend {

class ProcessGroupTutti final : public BackendBase {
 public:
  // Collective over the group's ranks: meets the others through `store` (torch's prefix store of
  // this group). `timeout` (torch's process group timeout) bounds joining and every operation.
  // `address`: where this rank listens for its peers, unless TUTTI_ADDR or TUTTI_SOCKET_IFNAME
  // say otherwise ("": tutti's default for a caller's store, the address the host name resolves
  // to). tutti.torch passes this host's address on the route to the store (MASTER_ADDR).
  ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout, const std::string& address = "");
  ~ProcessGroupTutti() override;

  // The constructor's arguments; every group is made here, so that stop_all_workers() finds it.
  static c10::intrusive_ptr<ProcessGroupTutti> make(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int size,
                                                    std::chrono::milliseconds timeout,
                                                    const std::string& address = "");

  // Every live group's queued operations run, then its worker thread stops (later operations are
  // refused, as after shutdown()). tutti.torch calls it from an atexit hook, before the
  // interpreter finalizes: a worker that drops the last reference to a tensor Python has seen
  // takes the GIL, and a thread that asks for the GIL while Python finalizes is ended by Python
  // (pthread_exit), whose forced unwind through a destructor is std::terminate ("terminate called
  // without an active exception", exit by SIGABRT) in a script that never destroyed its groups.
  // Call without the GIL.
  static void stop_all_workers();

  const std::string getBackendName() const override { return "tutti"; }

  // What joining found about OpenMP threads on this host and did (tutti/torch_openmp.hpp); the
  // Python package logs it.
  const std::string& openmp_note() const { return openmp_note_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // The count of operations issued on this group (torch's desync checks compare it across ranks).
  // Every rank starts at 0 when the group is made, so setting needs no agreement.
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;

#if TUTTI_TORCH_BACKEND_API
  // The coalesced tensor forms (FSDP, torch.distributed's _coalescing_manager): output i holds
  // size x input i (all-gather), input i holds size x output i (reduce-scatter); one tutti call for
  // all of them.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;

  // split_group and DeviceMesh: the listed ranks (of this group) form a new group on `store` (a
  // store of the child's own); a rank not listed gets none. No collective on this group is needed.
  bool supportsSplitting() const override {
    return true;
  }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  c10::intrusive_ptr<Options> getBackendOptions() override;

  // abort(): every pending and later operation of this group, on every rank, fails at once
  // (tutti's Communicator::abort). shutdown(): the queued operations finish, then the worker stops;
  // later operations are refused by name.
  void abort() override;
  void shutdown() override;

  // torch.distributed.set_timeout: the timeout of this group's later operations that have none of
  // their own (joining is over by then).
  void setTimeout(std::chrono::milliseconds timeout) override;
#endif

 private:
  // Queues `body` (run on the worker thread with the communicator) behind everything queued
  // before; the returned Work completes with `outputs` when it returns, or with its error as a
  // RuntimeError that starts with `label` ("tutti allreduce of float32[10]"). CUDA tensors among
  // `outputs` and `inputs`: body runs with the issuing thread's current stream current
  // (caller_stream.hpp), and the Work's future is one of their device.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char* op, std::string label,
                                         std::vector<at::Tensor> outputs,
                                         std::function<void(const tutti::Communicator&)> body,
                                         const std::vector<at::Tensor>& inputs = {});

  // Posts a send or receive (`post` runs on the worker thread) and completes its Work when the
  // request does.
  c10::intrusive_ptr<c10d::Work> enqueue_p2p(
      c10d::OpType type, const char* op, std::string label, at::Tensor tensor,
      std::function<tutti::Request(const tutti::Communicator&, const at::Tensor&)> post);

  // Runs what is queued, then stops the worker thread (without the GIL); later operations are
  // refused.
  void stop_worker();

  // Queues `job` on the worker, or throws an error naming `op` once shutdown() has stopped it.
  void submit(const char* op, std::function<void(Worker&)> job);

  // An operation's timeout: its own, else the one set_timeout gave, else (unset) the
  // communicator's, which is the group's timeout at creation.
  std::chrono::milliseconds effective(std::chrono::milliseconds timeout) const;

  std::string address_;  // where this rank listens (for the groups split from this one)
  std::chrono::milliseconds timeout_;
  std::atomic<int64_t> timeout_set_ms_{0};  // set_timeout's value; 0: none
  std::atomic<uint64_t> sequence_{0};
  tutti::Communicator comm_;
  std::string openmp_note_;
  std::shared_ptr<GroupLink> link_;  // the Works' way to abort comm_ (wait with a timeout)
  std::mutex worker_mutex_;          // guards worker_ itself (shutdown() may race an enqueue)
  std::atomic<bool> stopped_at_exit_{false};  // by stop_all_workers: later calls say so
  std::unique_ptr<Worker> worker_;  // last: stops (and drains) before the communicator goes
};

// Runs `f` with the Python GIL released when the calling thread holds it. Destroying a group joins
// its worker thread, which may need the GIL to finish (dropping its last reference to a tensor that
// Python has seen takes it), while whoever destroys the group may hold the GIL: Python itself
// (destroy_process_group) or DDP's Reducer, collected by Python. The Python module installs it;
// this file knows nothing of Python.
using GilReleaser = void (*)(const std::function<void()>& f);
void set_gil_releaser(GilReleaser releaser);

}  // namespace tutti::torch_backend
