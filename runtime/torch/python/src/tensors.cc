#include "tensors.hpp"

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <optional>

#include "caller_stream.hpp"
#include "tutti/torch_ops.hpp"

namespace tutti::torch_backend {
namespace {

// The C++ binding's map (libtutti_torch), so the two faces of torch agree on every dtype.
std::optional<DataType> maybe_data_type(at::ScalarType type) {
  return tutti::torchx::maybe_tutti(type);
}

}  // namespace

at::Tensor carried(const at::Tensor& tensor) {
  return tensor.defined() && tensor.is_complex() ? at::view_as_real(tensor) : tensor;
}

std::string describe(const at::Tensor& tensor) {
  // tutti's dtype names where it has one (the names tutti's own errors use), else torch's.
  const std::optional<DataType> type = maybe_data_type(tensor.scalar_type());
  std::string out = (type ? std::string(tutti::to_string(*type))
                          : std::string(c10::toString(tensor.scalar_type()))) +
                    "[";
  for (int64_t d = 0; d < tensor.dim(); ++d)
    out += (d ? ", " : "") + std::to_string(tensor.size(d));
  return out + "]";
}

std::string label_of(const char* op, const at::Tensor& tensor) {
  return std::string("tutti ") + op + " of " + describe(tensor);
}

void check_tensor(const char* op, const at::Tensor& tensor, bool complex_ok) {
  TORCH_CHECK(tensor.defined(), "tutti ", op, ": an undefined tensor");
  TORCH_CHECK(!tensor.is_cuda() || cuda_tensors_supported(), "tutti ", op, ": tensor ",
              describe(tensor), " is on ", tensor.device(),
              "; with this torch (1.x) backend tutti takes CPU tensors (CUDA tensors need torch "
              "2.x, or use backend nccl)");
  TORCH_CHECK(tensor.device().is_cpu() || tensor.is_cuda(), "tutti ", op, ": tensor ",
              describe(tensor), " is on ", tensor.device(),
              "; backend tutti takes CPU and CUDA tensors");
  TORCH_CHECK(tensor.layout() == at::kStrided, "tutti ", op, ": tensor ", describe(tensor), " is ",
              tensor.layout(), "; backend tutti takes dense (strided) tensors");
  // Throws for a dtype tutti does not carry (complex: where the op carries it as its real view).
  (void)data_type_of(complex_ok ? carried(tensor) : tensor);
}

void check_same_dtype(const char* op, const char* a_name, const at::Tensor& a, const char* b_name,
                      const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "tutti ", op, ": ", a_name, " ", describe(a),
              " and ", b_name, " ", describe(b),
              " differ in dtype; backend tutti converts no dtype: pass tensors of one dtype");
}

void check_tensors(const char* op, const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) {
    check_tensor(op, t);
    TORCH_CHECK(t.scalar_type() == tensors.front().scalar_type(), "tutti ", op,
                ": tensors of different dtypes (", describe(tensors.front()), " and ", describe(t),
                ")");
  }
}

const at::Tensor& single_tensor(const char* op, const std::vector<at::Tensor>& tensors,
                                bool complex_ok) {
  TORCH_CHECK(tensors.size() == 1, "tutti ", op, ": takes exactly one tensor per process, got ",
              tensors.size());
  check_tensor(op, tensors.front(), complex_ok);
  return tensors.front();
}

tutti::DataType data_type_of(const at::Tensor& tensor) {
  const std::optional<DataType> type = maybe_data_type(tensor.scalar_type());
  TORCH_CHECK(type, "tutti: tensor ", describe(tensor),
              " has a dtype backend tutti does not carry (float, double, half, bfloat16, "
              "int8/16/32/64, uint8, bool; complex in broadcast, and in all_reduce and reduce "
              "with sum or avg; for other ops pass torch.view_as_real(tensor))");
  return *type;
}

tutti::CallOptions call_options(std::chrono::milliseconds timeout) {
  tutti::CallOptions call;
  if (timeout != c10d::kUnsetTimeout) call.timeout = timeout;
  return call;
}

namespace {

// The factor of a PREMUL_SUM: a double, or a one-element tensor (torch 2.x; torch 1.13 takes a list
// of per-tensor factors, which tutti cannot apply, since it reduces one buffer with one factor).
double premul_factor(const char* op, const c10d::NCCLPreMulSumSupplement& supplement) {
#if TORCH_VERSION_MAJOR >= 2
  if (supplement.tensor_factor.defined()) return supplement.tensor_factor.item<double>();
#else
  TORCH_CHECK(supplement.tensor_factors.empty(), "tutti ", op,
              ": PREMUL_SUM is supported with a scalar factor only");
#endif
  (void)op;
  return supplement.double_factor;
}

}  // namespace

Reduction reduction_of(const char* op, const c10d::ReduceOp& reduce_op, const at::Tensor& tensor,
                       std::chrono::milliseconds timeout) {
  Reduction r{tutti::ReduceOp::kSum, call_options(timeout)};
  switch (reduce_op.op_) {
    case c10d::ReduceOp::SUM:
      r.op = tutti::ReduceOp::kSum;
      break;
    case c10d::ReduceOp::AVG:
      r.op = tutti::ReduceOp::kAvg;
      break;
    case c10d::ReduceOp::PRODUCT:
      r.op = tutti::ReduceOp::kProd;
      break;
    case c10d::ReduceOp::MIN:
      r.op = tutti::ReduceOp::kMin;
      break;
    case c10d::ReduceOp::MAX:
      r.op = tutti::ReduceOp::kMax;
      break;
    case c10d::ReduceOp::BAND:
      r.op = tutti::ReduceOp::kBand;
      break;
    case c10d::ReduceOp::BOR:
      r.op = tutti::ReduceOp::kBor;
      break;
    case c10d::ReduceOp::BXOR:
      r.op = tutti::ReduceOp::kBxor;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      // A scalar factor is tutti's prescale, applied inside the reduce loop; a per-tensor factor
      // (a tensor on each rank) has no tutti counterpart.
      const auto* supplement =
          dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(reduce_op.supplement_.get());
      TORCH_CHECK(supplement, "tutti ", op, ": PREMUL_SUM without a factor");
      TORCH_CHECK(at::isFloatingType(tensor.scalar_type()), "tutti ", op,
                  ": PREMUL_SUM needs a floating tensor, got ", describe(tensor));
      r.op = tutti::ReduceOp::kSum;
      r.call.prescale = premul_factor(op, *supplement);
      break;
    }
    default:
      TORCH_CHECK(false, "tutti ", op, ": reduce op ", static_cast<int>(reduce_op.op_),
                  " is not supported");
  }
  if (tensor.is_complex()) {
    TORCH_CHECK(r.op == tutti::ReduceOp::kSum || r.op == tutti::ReduceOp::kAvg, "tutti ", op,
                ": reduce op ", tutti::to_string(r.op), " is not defined on complex tensors (",
                describe(tensor), "); sum and avg are");
    return r;
  }
  TORCH_CHECK(tutti::supports(data_type_of(tensor), r.op), "tutti ", op, ": reduce op ",
              tutti::to_string(r.op), " is not defined on ", describe(tensor));
  return r;
}

at::Tensor flat_concat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void copy_from_flat(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const auto& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

std::vector<size_t> counts_of(const std::vector<at::Tensor>& tensors) {
  std::vector<size_t> counts;
  counts.reserve(tensors.size());
  for (const auto& t : tensors) counts.push_back(static_cast<size_t>(t.numel()));
  return counts;
}

}  // namespace tutti::torch_backend
