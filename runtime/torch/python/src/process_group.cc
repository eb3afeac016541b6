#include "process_group.hpp"

#include <c10/util/Exception.h>
#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "caller_stream.hpp"
#include "store_adapter.hpp"
#include "tensors.hpp"
#include "tutti/torch_openmp.hpp"

namespace tutti::torch_backend {
namespace {

tutti::Communicator join(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::chrono::milliseconds timeout, const std::string& address) {
  tutti::Options options = tutti::Options::from_env();
  options.timeout = timeout;
  options.init_timeout = timeout;
  // torch's rules set every call's timeout (init_process_group's `timeout`, or the op's), so a
  // timeout message must not advise TUTTI_COLLECTIVE_TIMEOUT, which is ignored here.
  options.timeout_setting =
      "the timeout of init_process_group / new_group (or the collective's own timeout argument)";
  // torch's store hides its socket, so tutti cannot learn which of this host's addresses reaches
  // it; the host name's address is wrong wherever the host name resolves to loopback (netns pods,
  // many /etc/hosts), and peers on other hosts would then dial their own loopback until the
  // timeout. The settings the user gave still win.
  if (!address.empty() && options.listen_address.empty() && options.socket_ifname.empty())
    options.listen_address = address;
  // torch gives every group a store prefix of its own, so one fixed name pairs the ranks of a
  // group; counting create() calls would not, since ranks outside a new group never call it.
  options.name = "torch";
  return tutti::Communicator::create(std::make_shared<C10dStore>(store), rank, size, options);
}

// The error a Work carries: a std::runtime_error (RuntimeError in Python) naming the operation.
std::exception_ptr labelled(const std::string& label) {
  try {
    throw;
  } catch (const c10::Error& e) {
    return std::make_exception_ptr(std::runtime_error(label + ": " + e.what_without_backtrace()));
  } catch (const tutti::Error& e) {
    // torch's own backends say "Timed out"; scripts and torch's tests look for those words.
    const std::string prefix = e.code() == ErrorCode::kTimeout ? ": Timed out (" : ": ";
    const std::string suffix = e.code() == ErrorCode::kTimeout ? ")" : "";
    return std::make_exception_ptr(std::runtime_error(label + prefix + e.what() + suffix));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(std::runtime_error(label + ": " + e.what()));
  } catch (...) {
    return std::make_exception_ptr(std::runtime_error(label + ": unknown error"));
  }
}

void check_root(const char* op, int64_t root, int size) {
  TORCH_CHECK(root >= 0 && root < size, "tutti ", op, ": root ", root,
              " is not a rank of a group of ", size);
}

}  // namespace

ProcessGroupTutti::ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout,
                                     const std::string& address)
    : BackendBase(rank, size),
      address_(address),
      timeout_(timeout),
      comm_(join(store, rank, size, timeout, address)),
      // Here, where every group's ranks meet, because the ranks on a host are known from here on.
      openmp_note_(tutti::torchx::fit_openmp_to_host(comm_).note),
      link_(std::make_shared<GroupLink>(comm_, rank, size)),
      worker_(std::make_unique<Worker>()) {
  init();
}

namespace {
std::atomic<GilReleaser> gil_releaser{nullptr};

// Every group made, held weakly (the registry must not keep a group alive), for
// stop_all_workers(). Only make() and stop_all_workers() use it, both while Python runs, so its
// destruction at exit (after Python finalized) meets nobody; a weak reference may outlive its
// group, never the other way round.
struct Registry {
  std::mutex mutex;
  std::vector<c10::weak_intrusive_ptr<ProcessGroupTutti>> groups;
};
Registry& registry() {
  static Registry registry;
  return registry;
}
}  // namespace

void set_gil_releaser(GilReleaser releaser) {
  gil_releaser = releaser;
}

c10::intrusive_ptr<ProcessGroupTutti> ProcessGroupTutti::make(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout, const std::string& address) {
  auto group = c10::make_intrusive<ProcessGroupTutti>(store, rank, size, timeout, address);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.groups, [](const auto& g) { return g.expired(); });
  r.groups.emplace_back(group);
  return group;
}

void ProcessGroupTutti::stop_all_workers() {
  // Strong references first, under the lock; stopped without it, since a worker's last jobs may
  // run Python callbacks that make or destroy groups.
  std::vector<c10::intrusive_ptr<ProcessGroupTutti>> live;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (auto& g : r.groups)
      if (auto strong = g.lock()) live.push_back(std::move(strong));
    r.groups.clear();
  }
  for (auto& g : live) {
    g->stopped_at_exit_ = true;
    g->stop_worker();
  }
}

ProcessGroupTutti::~ProcessGroupTutti() {
  link_->detach();  // a Work that outlives the group can no longer abort it
  stop_worker();
}

void ProcessGroupTutti::stop_worker() {
  std::unique_ptr<Worker> worker;
  {
    std::lock_guard lock(worker_mutex_);
    worker = std::move(worker_);
  }
  const auto drain = [&worker] { worker.reset(); };
  if (const GilReleaser releaser = gil_releaser.load())
    releaser(drain);
  else
    drain();
}

std::chrono::milliseconds ProcessGroupTutti::effective(std::chrono::milliseconds timeout) const {
  const int64_t set = timeout_set_ms_.load();
  if (timeout != c10d::kUnsetTimeout || set == 0) return timeout;
  return std::chrono::milliseconds(set);
}

void ProcessGroupTutti::setSequenceNumberForGroup() {
  sequence_ = 0;
}

uint64_t ProcessGroupTutti::getSequenceNumberForGroup() {
  return sequence_;
}

void ProcessGroupTutti::submit(const char* op, std::function<void(Worker&)> job) {
  // Queued under the lock: shutdown() cannot take the worker away between the check and the
  // enqueue. The job gets the worker itself, since worker_ is empty while the worker drains.
  std::lock_guard lock(worker_mutex_);
  TORCH_CHECK(worker_ || !stopped_at_exit_, op,
              ": this tutti process group was stopped at interpreter exit (tutti.torch's atexit "
              "hook); an atexit hook that still calls collectives must be registered after "
              "`import tutti.torch` (atexit runs the last registered first)");
  TORCH_CHECK(worker_, op,
              ": this tutti process group was shut down (shutdown() or "
              "destroy_process_group); make a new one with new_group or init_process_group");
  Worker* worker = worker_.get();
  worker->enqueue([worker, job = std::move(job)] { job(*worker); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::enqueue(
    c10d::OpType type, const char* op, std::string label, std::vector<at::Tensor> outputs,
    std::function<void(const tutti::Communicator&)> body, const std::vector<at::Tensor>& inputs) {
  const std::optional<c10::Stream> stream = CallerStream::of(op, outputs, inputs);
  ++sequence_;
  auto work = c10::make_intrusive<TuttiWork>(link_, type, op, label, std::move(outputs), stream);
  submit(op,
         [this, work, stream, body = std::move(body), label = std::move(label)](Worker& worker) {
           // The caller's stream stays current through complete(): the future records its event
           // there.
           const CallerStream::Guard on_callers_stream(stream);
           work->start();
           std::exception_ptr error;
           try {
             body(comm_);
           } catch (...) {
             error = labelled(label);
           }
           // On CUDA tensors the op returned once enqueued on the caller's stream (on_stream): the
           // Work completes now, its future's event orders what the caller does after it on the
           // device, and the worker watches the device work for failures and deadlines from here
           // on.
           if (stream && !error) worker.watch_device(comm_, rank_);
           work->complete(error);
         });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::enqueue_p2p(
    c10d::OpType type, const char* op, std::string label, at::Tensor tensor,
    std::function<tutti::Request(const tutti::Communicator&, const at::Tensor&)> post) {
  const std::optional<c10::Stream> stream = CallerStream::of(op, {tensor});
  ++sequence_;
  auto work = c10::make_intrusive<TuttiWork>(link_, type, op, label,
                                             std::vector<at::Tensor>{tensor}, stream);
  submit(op, [this, work, tensor, stream, post = std::move(post),
              label = std::move(label)](Worker& worker) {
    // Sends and receives run on host buffers: a CUDA tensor goes through a CPU copy.
    const CallerStream::Guard on_callers_stream(stream);
    work->start();
    try {
      auto staged = std::make_shared<Staged>(tensor, Staged::kHost);
      tutti::Request request = post(comm_, staged->buffer());
      worker.watch(std::move(request), [work, staged, stream, label](std::exception_ptr error) {
        const CallerStream::Guard on_callers_stream(stream);
        if (error) {
          try {
            std::rethrow_exception(error);
          } catch (...) {
            error = labelled(label);
          }
        } else {
          try {
            staged->write_back();
          } catch (...) {
            error = labelled(label);
          }
        }
        work->complete(error);
      });
    } catch (...) {
      work->complete(labelled(label));
    }
  });
  return work;
}

// ---- Collectives on one tensor ---------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  const at::Tensor& given = single_tensor("allreduce", tensors, /*complex_ok=*/true);
  const Reduction r = reduction_of("allreduce", opts.reduceOp, given, effective(opts.timeout));
  const at::Tensor tensor = carried(given);
  return enqueue(c10d::OpType::ALLREDUCE, "tutti:all_reduce", label_of("allreduce", given), tensors,
                 [tensor, r](const tutti::Communicator& comm) {
                   Staged s(tensor);
                   comm.allreduce(s.data(), s.data(), s.count(), data_type_of(tensor), r.op,
                                  on_stream(r.call, tensor));
                   s.write_back();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "tutti allreduce_coalesced: no tensors");
  check_tensors("allreduce_coalesced", tensors);
  const Reduction r =
      reduction_of("allreduce_coalesced", opts.reduceOp, tensors.front(), effective(opts.timeout));
  // One allreduce of the tensors back to back: one round of latency instead of one per tensor.
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "tutti:all_reduce_coalesced",
                 label_of("allreduce_coalesced", tensors.front()) + " and " +
                     std::to_string(tensors.size() - 1) + " more",
                 tensors, [tensors, r](const tutti::Communicator& comm) {
                   at::Tensor flat = flat_concat(tensors);
                   comm.allreduce(flat.data_ptr(), flat.data_ptr(), flat.numel(),
                                  data_type_of(flat), r.op, on_stream(r.call, flat));
                   copy_from_flat(flat, tensors);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  const at::Tensor& given = single_tensor("broadcast", tensors, /*complex_ok=*/true);
  check_root("broadcast", opts.rootRank, size_);
  const int root = static_cast<int>(opts.rootRank);
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  // Bytes are bytes: a complex tensor goes as its real view (gloo broadcasts complex too).
  const at::Tensor tensor = carried(given);
  return enqueue(c10d::OpType::BROADCAST, "tutti:broadcast", label_of("broadcast", given), tensors,
                 [tensor, root, call](const tutti::Communicator& comm) {
                   Staged s(tensor);
                   comm.broadcast(s.data(), s.count(), data_type_of(tensor), root,
                                  on_stream(call, tensor));
                   s.write_back();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  const at::Tensor& given = single_tensor("reduce", tensors, /*complex_ok=*/true);
  check_root("reduce", opts.rootRank, size_);
  const int root = static_cast<int>(opts.rootRank);
  const Reduction r = reduction_of("reduce", opts.reduceOp, given, effective(opts.timeout));
  const at::Tensor tensor = carried(given);
  return enqueue(c10d::OpType::REDUCE, "tutti:reduce", label_of("reduce", given), tensors,
                 [tensor, root, r](const tutti::Communicator& comm) {
                   Staged s(tensor, Staged::kHost);
                   comm.reduce(s.data(), s.data(), s.count(), data_type_of(tensor), r.op, root,
                               r.call);
                   if (comm.rank() == root) s.write_back();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::barrier(const c10d::BarrierOptions& opts) {
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(c10d::OpType::BARRIER, "tutti:barrier", "tutti barrier", {},
                 [call](const tutti::Communicator& comm) { comm.barrier(call); });
}

// ---- Gathers -----------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const at::Tensor& input = single_tensor("allgather", inputs);
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
              "tutti allgather: needs one list of ", size_, " output tensors");
  for (const auto& out : outputs[0]) {
    check_tensor("allgather", out);
    check_same_dtype("allgather", "output", out, "input", input);
    TORCH_CHECK(out.numel() == input.numel(), "tutti allgather: output ", describe(out),
                " does not hold as many elements as input ", describe(input));
  }
  const std::vector<at::Tensor> outs = outputs[0];
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(c10d::OpType::ALLGATHER, "tutti:all_gather", label_of("allgather", input), outs,
                 [input, outs, call](const tutti::Communicator& comm) {
                   const Staged in(input);
                   at::Tensor flat = at::empty({input.numel() * comm.size()}, input.options());
                   comm.allgather(in.data(), flat.data_ptr(), in.count(), data_type_of(input),
                                  on_stream(call, input));
                   copy_from_flat(flat, outs);
                 },
                 {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  check_tensor("_allgather_base", input);
  check_tensor("_allgather_base", output);
  check_same_dtype("_allgather_base (all_gather_into_tensor)", "output", output, "input", input);
  TORCH_CHECK(output.numel() == input.numel() * size_,
              "tutti _allgather_base (all_gather_into_tensor): output ", describe(output),
              " must hold ", size_, " times input ", describe(input), " (the group's size)");
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "tutti:_all_gather_base",
                 label_of("_allgather_base", input), {output},
                 [input, output, call](const tutti::Communicator& comm) {
                   const Staged in(input);
                   Staged out(output);
                   comm.allgather(in.data(), out.data(), in.count(), data_type_of(input),
                                  on_stream(call, input));
                   out.write_back();
                 },
                 {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(!inputs.empty(), "tutti allgather_coalesced: no input tensors");
  check_tensors("allgather_coalesced", inputs);
  TORCH_CHECK(static_cast<int>(output_lists.size()) == size_, "tutti allgather_coalesced: needs ",
              size_, " output lists, got ", output_lists.size());
  // Rank p's block is its inputs back to back; the output lists say how long each block is.
  std::vector<size_t> counts;
  std::vector<at::Tensor> outs;
  for (const auto& list : output_lists) {
    check_tensors("allgather_coalesced", list);
    size_t count = 0;
    for (const auto& t : list) {
      TORCH_CHECK(t.scalar_type() == inputs.front().scalar_type(),
                  "tutti allgather_coalesced: output ", describe(t), " and input ",
                  describe(inputs.front()), " differ in dtype");
      count += static_cast<size_t>(t.numel());
      outs.push_back(t);
    }
    counts.push_back(count);
  }
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(
      c10d::OpType::ALLGATHER_COALESCED, "tutti:all_gather_coalesced",
      label_of("allgather_coalesced", inputs.front()), outs,
      [inputs, outs, counts, call](const tutti::Communicator& comm) {
        const at::Tensor in = on_host(flat_concat(inputs));
        size_t total = 0;
        for (size_t c : counts) total += c;
        TORCH_CHECK(static_cast<size_t>(in.numel()) == counts[comm.rank()],
                    "this rank's inputs hold ", in.numel(), " elements but its output list holds ",
                    counts[comm.rank()]);
        at::Tensor flat = at::empty({static_cast<int64_t>(total)}, in.options());
        comm.allgatherv(in.data_ptr(), flat.data_ptr(), counts, data_type_of(in), call);
        copy_from_flat(flat, outs);
      },
      inputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const at::Tensor& input = single_tensor("gather", inputs);
  check_root("gather", opts.rootRank, size_);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "tutti gather: the root needs one list of ", size_, " output tensors");
    for (const auto& out : outputs[0]) {
      check_tensor("gather", out);
      check_same_dtype("gather", "output", out, "input", input);
      TORCH_CHECK(out.numel() == input.numel(), "tutti gather: output ", describe(out),
                  " does not hold as many elements as input ", describe(input));
    }
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty(), "tutti gather: only the root takes output tensors");
  }
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(c10d::OpType::GATHER, "tutti:gather", label_of("gather", input), outs,
                 [input, outs, root, call](const tutti::Communicator& comm) {
                   const Staged in(input, Staged::kHost);
                   at::Tensor flat;
                   if (comm.rank() == root)
                     flat = at::empty({input.numel() * comm.size()}, in.buffer().options());
                   comm.gather(in.data(), flat.defined() ? flat.data_ptr() : nullptr, in.count(),
                               data_type_of(input), root, call);
                   if (flat.defined()) copy_from_flat(flat, outs);
                 },
                 {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const at::Tensor& output = single_tensor("scatter", outputs);
  check_root("scatter", opts.rootRank, size_);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                "tutti scatter: the root needs one list of ", size_, " input tensors");
    for (const auto& in : inputs[0]) {
      check_tensor("scatter", in);
      check_same_dtype("scatter", "input", in, "output", output);
      TORCH_CHECK(in.numel() == output.numel(), "tutti scatter: input ", describe(in),
                  " does not hold as many elements as output ", describe(output));
    }
    ins = inputs[0];
  } else {
    TORCH_CHECK(inputs.empty(), "tutti scatter: only the root takes input tensors");
  }
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(
      c10d::OpType::SCATTER, "tutti:scatter", label_of("scatter", output), outputs,
      [output, ins, root, call](const tutti::Communicator& comm) {
        at::Tensor flat;
        if (comm.rank() == root) flat = on_host(flat_concat(ins));
        Staged out(output, Staged::kHost);
        comm.scatter(flat.defined() ? flat.data_ptr() : nullptr, out.data(), out.count(),
                     data_type_of(output), root, call);
        out.write_back();
      },
      ins);
}

// ---- Reduce-scatter and all-to-all ---------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& output = single_tensor("reduce_scatter", outputs);
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
              "tutti reduce_scatter: needs one list of ", size_, " input tensors");
  check_tensors("reduce_scatter", inputs[0]);
  check_same_dtype("reduce_scatter", "output", output, "input", inputs[0][rank_]);
  TORCH_CHECK(inputs[0][rank_].numel() == output.numel(), "tutti reduce_scatter: output ",
              describe(output), " does not hold as many elements as input ",
              describe(inputs[0][rank_]), " of this rank");
  const std::vector<at::Tensor> ins = inputs[0];
  const Reduction r =
      reduction_of("reduce_scatter", opts.reduceOp, output, effective(opts.timeout));
  return enqueue(
      c10d::OpType::REDUCE_SCATTER, "tutti:reduce_scatter", label_of("reduce_scatter", output),
      outputs,
      [output, ins, r](const tutti::Communicator& comm) {
        const at::Tensor flat = on_host(flat_concat(ins));
        Staged out(output, Staged::kHost);
        comm.reduce_scatterv(flat.data_ptr(), out.data(), counts_of(ins), data_type_of(output),
                             r.op, r.call);
        out.write_back();
      },
      ins);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  check_tensor("_reduce_scatter_base", input);
  check_tensor("_reduce_scatter_base", output);
  check_same_dtype("_reduce_scatter_base (reduce_scatter_tensor)", "input", input, "output",
                   output);
  TORCH_CHECK(input.numel() == output.numel() * size_,
              "tutti _reduce_scatter_base (reduce_scatter_tensor): input ", describe(input),
              " must hold ", size_, " times output ", describe(output), " (the group's size)");
  const Reduction r =
      reduction_of("_reduce_scatter_base", opts.reduceOp, output, effective(opts.timeout));
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "tutti:_reduce_scatter_base",
                 label_of("_reduce_scatter_base", input), {output},
                 [input, output, r](const tutti::Communicator& comm) {
                   const Staged in(input);
                   Staged out(output);
                   comm.reduce_scatter(in.data(), out.data(), out.count(), data_type_of(output),
                                       r.op, on_stream(r.call, output));
                   out.write_back();
                 },
                 {input});
}

namespace {

// Element counts per peer of an all-to-all split along dim 0 (torch's split sizes are rows; no
// sizes means equal blocks).
std::vector<size_t> split_counts(const char* op, const at::Tensor& tensor,
                                 const std::vector<int64_t>& split_sizes, int size) {
  const int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
  const int64_t row_count = rows == 0 ? 0 : tensor.numel() / rows;
  std::vector<size_t> counts;
  if (split_sizes.empty()) {
    TORCH_CHECK(rows % size == 0, "tutti ", op, ": ", describe(tensor), " does not split into ",
                size, " equal blocks along dim 0");
    counts.assign(size, static_cast<size_t>(rows / size * row_count));
    return counts;
  }
  TORCH_CHECK(static_cast<int>(split_sizes.size()) == size, "tutti ", op, ": ", split_sizes.size(),
              " split sizes for a group of ", size);
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    TORCH_CHECK(s >= 0, "tutti ", op, ": negative split size ", s);
    total += s;
    counts.push_back(static_cast<size_t>(s * row_count));
  }
  TORCH_CHECK(total == rows, "tutti ", op, ": split sizes add up to ", total, " rows, ",
              describe(tensor), " has ", rows);
  return counts;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  check_tensor("alltoall_base", input);
  check_tensor("alltoall_base", output);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tutti alltoall_base: output ",
              describe(output), " and input ", describe(input), " differ in dtype");
  const std::vector<size_t> send_counts =
      split_counts("alltoall_base", input, input_split_sizes, size_);
  const std::vector<size_t> recv_counts =
      split_counts("alltoall_base", output, output_split_sizes, size_);
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(
      c10d::OpType::ALLTOALL_BASE, "tutti:all_to_all", label_of("alltoall_base", input), {output},
      [input, output, send_counts, recv_counts, call](const tutti::Communicator& comm) {
        const Staged in(input, Staged::kHost);
        Staged out(output, Staged::kHost);
        comm.alltoallv(in.data(), send_counts, out.data(), recv_counts, data_type_of(input), call);
        out.write_back();
      },
      {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "tutti alltoall: needs ", size_, " input and ", size_, " output tensors");
  check_tensors("alltoall", inputs);
  check_tensors("alltoall", outputs);
  TORCH_CHECK(inputs.front().scalar_type() == outputs.front().scalar_type(),
              "tutti alltoall: inputs and outputs differ in dtype");
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  return enqueue(
      c10d::OpType::ALLTOALL, "tutti:all_to_all", label_of("alltoall", inputs.front()), outputs,
      [inputs, outputs, call](const tutti::Communicator& comm) {
        const at::Tensor in = on_host(flat_concat(inputs));
        int64_t total = 0;
        for (const auto& t : outputs) total += t.numel();
        at::Tensor out = at::empty({total}, in.options());
        comm.alltoallv(in.data_ptr(), counts_of(inputs), out.data_ptr(), counts_of(outputs),
                       data_type_of(in), call);
        copy_from_flat(out, outputs);
      },
      inputs);
}

// ---- Point to point ------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::send(std::vector<at::Tensor>& tensors,
                                                       int dst_rank, int tag) {
  const at::Tensor& tensor = single_tensor("send", tensors);
  check_root("send", dst_rank, size_);
  return enqueue_p2p(c10d::OpType::SEND, "tutti:send",
                     label_of("send", tensor) + " to rank " + std::to_string(dst_rank), tensor,
                     [dst_rank, tag](const tutti::Communicator& comm, const at::Tensor& buf) {
                       return comm.isend(buf.data_ptr(), buf.numel(), data_type_of(buf), dst_rank,
                                         tag);
                     });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recv(std::vector<at::Tensor>& tensors,
                                                       int src_rank, int tag) {
  const at::Tensor& tensor = single_tensor("recv", tensors);
  check_root("recv", src_rank, size_);
  return enqueue_p2p(c10d::OpType::RECV, "tutti:recv",
                     label_of("recv", tensor) + " from rank " + std::to_string(src_rank), tensor,
                     [src_rank, tag](const tutti::Communicator& comm, const at::Tensor& buf) {
                       return comm.irecv(buf.data_ptr(), buf.numel(), data_type_of(buf), src_rank,
                                         tag);
                     });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false,
              "tutti recv: a receive from any source is not supported (tutti matches messages "
              "by sender and tag); pass src");
}

}  // namespace tutti::torch_backend
