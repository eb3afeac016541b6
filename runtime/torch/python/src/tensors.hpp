// What tutti needs to know about a torch tensor: its tutti DataType and ReduceOp, whether it can
// go to tutti at all (CPU or CUDA, dense), and a contiguous buffer for it (a copy for a strided
// view, written back after the operation).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

#include "tutti/options.hpp"
#include "tutti/types.hpp"

namespace tutti::torch_backend {

// "float32[4, 3]": how errors name a tensor.
std::string describe(const at::Tensor& tensor);
// "tutti allreduce of float32[4, 3]": how errors name an operation.
std::string label_of(const char* op, const at::Tensor& tensor);

// Throws (c10::Error, a RuntimeError in Python) naming `op` unless `tensor` is a dense CPU (or,
// with torch 2.x, CUDA) tensor of a dtype tutti carries.
// complex_ok: the op carries a complex tensor as its real view (see carried()).
void check_tensor(const char* op, const at::Tensor& tensor, bool complex_ok = false);
// check_tensor on each, and the same dtype as the first.
void check_tensors(const char* op, const std::vector<at::Tensor>& tensors);
// Throws naming `op` unless `a` and `b` (called `a_name` and `b_name`) have the same dtype: tutti
// moves elements of one dtype, and a dtype difference must not read as a size difference.
void check_same_dtype(const char* op, const char* a_name, const at::Tensor& a, const char* b_name,
                      const at::Tensor& b);
// The single tensor of a one-tensor-per-process call.
const at::Tensor& single_tensor(const char* op, const std::vector<at::Tensor>& tensors,
                                bool complex_ok = false);

tutti::DataType data_type_of(const at::Tensor& tensor);

// The tutti op for a torch ReduceOp, and the call options it needs (PREMUL_SUM with a scalar
// factor is a sum with a prescale). Throws for what tutti cannot do.
struct Reduction {
  tutti::ReduceOp op;
  tutti::CallOptions call;
};
Reduction reduction_of(const char* op, const c10d::ReduceOp& reduce_op, const at::Tensor& tensor,
                       std::chrono::milliseconds timeout);

// Per-call timeout: torch's kUnsetTimeout means the communicator's own.
tutti::CallOptions call_options(std::chrono::milliseconds timeout);

// A contiguous buffer for `tensor`: the tensor itself when it already is, else a copy that
// write_back() copies into the tensor after the operation. kHost: a CPU buffer even for a CUDA
// tensor, for the calls tutti runs on host buffers only.
class Staged {
 public:
  enum Where { kWhereItIs, kHost };
  explicit Staged(at::Tensor tensor, Where where = kWhereItIs)
      : tensor_(std::move(tensor)),
        buffer_(where == kHost && tensor_.is_cuda() ? tensor_.to(at::kCPU).contiguous()
                                                    : tensor_.contiguous()) {}
  void* data() const { return buffer_.data_ptr(); }
  size_t count() const { return static_cast<size_t>(buffer_.numel()); }
  const at::Tensor& buffer() const { return buffer_; }
  void write_back() const {
    if (!buffer_.is_same(tensor_)) tensor_.copy_(buffer_);
  }

 private:
  at::Tensor tensor_;
  at::Tensor buffer_;
};

// What tutti moves for `tensor`: a complex tensor as its real view (torch.view_as_real: the same
// storage, two floats per element), anything else as it is. Elementwise sum and avg of the real
// view are the complex ones; other reductions are refused before (reduction_of).
at::Tensor carried(const at::Tensor& tensor);

// The tensors, flattened and concatenated into one contiguous buffer (of their common dtype).
at::Tensor flat_concat(const std::vector<at::Tensor>& tensors);
// Copies consecutive pieces of `flat` back into `tensors` (their shapes and counts).
void copy_from_flat(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);
std::vector<size_t> counts_of(const std::vector<at::Tensor>& tensors);

}  // namespace tutti::torch_backend
