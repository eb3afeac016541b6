// ProcessGroupTutti's methods that exist only in torch 2.x's c10d::Backend (torch_api.hpp): the
// coalesced tensor collectives, split, and abort/shutdown. On torch 1.13 this file is empty.
#include <algorithm>

#include "caller_stream.hpp"
#include "process_group.hpp"
#include "tensors.hpp"

#if TUTTI_TORCH_BACKEND_API

namespace tutti::torch_backend {
namespace {

// One output per input, of the input's dtype, and `factor` times its size (size x for the
// all-gather's outputs, 1/size for the reduce-scatter's).
void check_coalesced(const char* op, const std::vector<at::Tensor>& small,
                     const std::vector<at::Tensor>& large, int size) {
  TORCH_CHECK(!small.empty(), "tutti ", op, ": no tensors");
  TORCH_CHECK(small.size() == large.size(), "tutti ", op, ": ", small.size(), " and ", large.size(),
              " tensors; it takes one output per input");
  check_tensors(op, small);
  check_tensors(op, large);
  for (size_t i = 0; i < small.size(); ++i) {
    TORCH_CHECK(large[i].scalar_type() == small[i].scalar_type(), "tutti ", op, ": tensor ", i,
                ": ", describe(large[i]), " and ", describe(small[i]),
                " differ in dtype; backend tutti converts no dtype: pass tensors of one dtype");
    TORCH_CHECK(large[i].numel() == small[i].numel() * size, "tutti ", op, ": tensor ", i, ": ",
                describe(large[i]), " must hold ", size, " times ", describe(small[i]),
                " (the group's size)");
  }
}

// OpType::ALLGATHER_INTO_TENSOR_COALESCED and REDUCE_SCATTER_TENSOR_COALESCED where this torch has
// them (they came after 2.11, whose c10d has only COALESCED for both); dependent names, so that
// their absence is no error.
template <typename Type = c10d::OpType>
constexpr Type allgather_into_tensor_coalesced_type() {
  if constexpr (requires { Type::ALLGATHER_INTO_TENSOR_COALESCED; })
    return Type::ALLGATHER_INTO_TENSOR_COALESCED;
  else
    return Type::COALESCED;
}
template <typename Type = c10d::OpType>
constexpr Type reduce_scatter_tensor_coalesced_type() {
  if constexpr (requires { Type::REDUCE_SCATTER_TENSOR_COALESCED; })
    return Type::REDUCE_SCATTER_TENSOR_COALESCED;
  else
    return Type::COALESCED;
}

int64_t total_numel(const std::vector<at::Tensor>& tensors) {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  return total;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* op = "allgather_into_tensor_coalesced";
  check_coalesced(op, inputs, outputs, size_);
  const tutti::CallOptions call = call_options(effective(opts.timeout));
  // One all-gather of the inputs back to back: rank p's block of the result is its inputs, so
  // output i is column block i of the [size, total] result.
  return enqueue(
      allgather_into_tensor_coalesced_type(), "tutti:all_gather_into_tensor_coalesced",
      label_of(op, inputs.front()) + " and " + std::to_string(inputs.size() - 1) + " more", outputs,
      [inputs, outputs, call](const tutti::Communicator& comm) {
        const at::Tensor in = flat_concat(inputs);
        const int64_t total = in.numel();
        at::Tensor grid = at::empty({comm.size(), total}, in.options());
        comm.allgather(in.data_ptr(), grid.data_ptr(), static_cast<size_t>(total), data_type_of(in),
                       on_stream(call, in));
        int64_t offset = 0;
        for (const auto& out : outputs) {
          const int64_t n = out.numel() / comm.size();
          out.copy_(grid.narrow(1, offset, n).reshape(out.sizes()));
          offset += n;
        }
      },
      inputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor_coalesced";
  check_coalesced(op, outputs, inputs, size_);
  const Reduction r = reduction_of(op, opts.reduceOp, outputs.front(), effective(opts.timeout));
  // The inputs laid out as [size, total]: row p holds rank p's share of every input, so one
  // reduce-scatter gives this rank its share of all of them, output after output.
  return enqueue(
      reduce_scatter_tensor_coalesced_type(), "tutti:reduce_scatter_tensor_coalesced",
      label_of(op, inputs.front()) + " and " + std::to_string(inputs.size() - 1) + " more", outputs,
      [inputs, outputs, r](const tutti::Communicator& comm) {
        const int64_t total = total_numel(outputs);
        at::Tensor grid = at::empty({comm.size(), total}, inputs.front().options());
        int64_t offset = 0;
        for (const auto& in : inputs) {
          const int64_t n = in.numel() / comm.size();
          grid.narrow(1, offset, n).copy_(in.reshape({comm.size(), n}));
          offset += n;
        }
        at::Tensor mine = at::empty({total}, grid.options());
        comm.reduce_scatter(grid.data_ptr(), mine.data_ptr(), static_cast<size_t>(total),
                            data_type_of(mine), r.op, on_stream(r.call, mine));
        copy_from_flat(mine, outputs);
      },
      inputs);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::split(
    const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<Options>& opts) {
  for (int r : ranks)
    TORCH_CHECK(r >= 0 && r < size_, "tutti split: rank ", r, " is not a rank of a group of ",
                size_);
  const auto mine = std::find(ranks.begin(), ranks.end(), rank_);
  if (mine == ranks.end()) return nullptr;  // torch: this rank is in none of the new groups
  const std::chrono::milliseconds set(timeout_set_ms_.load());
  const std::chrono::milliseconds timeout = opts ? opts->timeout : set.count() ? set : timeout_;
  // The child meets its members on its own store (torch prefixes it with the child's name), the
  // same way new_group does; the parent's communicator is not involved.
  return ProcessGroupTutti::make(store, static_cast<int>(mine - ranks.begin()),
                                 static_cast<int>(ranks.size()), timeout, address_);
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupTutti::getBackendOptions() {
  const std::chrono::milliseconds set(timeout_set_ms_.load());
  return c10::make_intrusive<Options>(getBackendName(), set.count() ? set : timeout_);
}

void ProcessGroupTutti::abort() {
  comm_.abort("torch.distributed aborted the process group");
}

void ProcessGroupTutti::shutdown() {
  stop_worker();
}

void ProcessGroupTutti::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout.count() > 0, "tutti set_timeout: the timeout must be positive, got ",
              timeout.count(), " ms");
  timeout_set_ms_ = timeout.count();  // groups split from this one later start with it too
}

}  // namespace tutti::torch_backend

#endif
