// Collectives on torch::Tensor: dtype mapping, the contiguous staging of strided tensors, and the
// blocking and asynchronous calls, all onto tutti's public Communicator.
#include <c10/util/StringUtil.h>

#include <cstring>
#include <sstream>

#include "tutti/torch_ops.hpp"

namespace tutti::torchx {
namespace {

std::string describe(const torch::Tensor& tensor) {
  std::ostringstream shape;
  shape << tensor.sizes();
  return c10::str("tensor of shape ", shape.str(), " and dtype ", tensor.scalar_type());
}

// The buffer a collective works on: the tensor itself when contiguous, else a contiguous copy
// that finish() writes back.
struct Staged {
  torch::Tensor target;
  torch::Tensor buffer;

  explicit Staged(torch::Tensor t)
      : target(std::move(t)), buffer(target.is_contiguous() ? target : target.contiguous()) {}
  void finish() {
    if (!buffer.is_same(target)) {
      // The collective wrote through the raw pointer; this copy must not join any autograd graph
      // (parameters are leaves that require grad).
      torch::NoGradGuard no_grad;
      target.copy_(buffer);
    }
  }
  size_t count() const { return static_cast<size_t>(buffer.numel()); }
  DataType type() const { return to_tutti(buffer.scalar_type()); }
};

}  // namespace

std::optional<DataType> maybe_tutti(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return DataType::kFloat32;
    case c10::ScalarType::Double:
      return DataType::kFloat64;
    case c10::ScalarType::Half:
      return DataType::kFloat16;
    case c10::ScalarType::BFloat16:
      return DataType::kBFloat16;
    case c10::ScalarType::Int:
      return DataType::kInt32;
    case c10::ScalarType::Long:
      return DataType::kInt64;
    case c10::ScalarType::Short:
      return DataType::kInt16;
    case c10::ScalarType::Char:
      return DataType::kInt8;
    case c10::ScalarType::Byte:
      return DataType::kUInt8;
    case c10::ScalarType::Bool:
      return DataType::kBool;
    default:
      return std::nullopt;
  }
}

DataType to_tutti(c10::ScalarType type, std::string_view what) {
  if (std::optional<DataType> t = maybe_tutti(type)) return *t;
  throw Error(ErrorCode::kInvalidArgument,
              c10::str("tutti::torchx: ", what, " has dtype ", type,
                       ", which tutti cannot reduce or send (supported: float32, float64, "
                       "float16, bfloat16, int8, int16, int32, int64, uint8, bool)"));
}

void check_tensor(const torch::Tensor& tensor, std::string_view what) {
  if (!tensor.defined())
    throw Error(ErrorCode::kInvalidArgument,
                c10::str("tutti::torchx: ", what, " is an undefined tensor"));
  if (!tensor.device().is_cpu())
    throw Error(ErrorCode::kInvalidArgument,
                c10::str("tutti::torchx: ", what, " lives on ", tensor.device().str(),
                         "; libtutti_torch takes CPU tensors"));
  if (tensor.layout() != c10::kStrided)
    throw Error(ErrorCode::kInvalidArgument,
                c10::str("tutti::torchx: ", what, " is not a dense (strided) tensor"));
  to_tutti(tensor.scalar_type(), what);
}

void allreduce_(torch::Tensor& tensor, ReduceOp op, const Communicator& comm) {
  check_tensor(tensor, describe(tensor));
  Staged s(tensor);
  comm.allreduce(s.buffer.data_ptr(), s.buffer.data_ptr(), s.count(), s.type(), op);
  s.finish();
}

void broadcast_(torch::Tensor& tensor, int root, const Communicator& comm) {
  check_tensor(tensor, describe(tensor));
  Staged s(tensor);
  comm.broadcast(s.buffer.data_ptr(), s.count(), s.type(), root);
  s.finish();
}

torch::Tensor allgather(const torch::Tensor& tensor, const Communicator& comm) {
  // The engine's allgather lets ranks give different row counts; a fixed name is safe because a
  // blocking call finishes before the next one can reuse it.
  return allgather_async("tutti.torchx.allgather", tensor, comm).wait();
}

Work::Work(Handle handle, std::function<torch::Tensor()> finish)
    : handle_(std::move(handle)), finish_(std::move(finish)) {}

torch::Tensor Work::wait(std::optional<std::chrono::milliseconds> timeout) {
  if (result_) return *result_;
  if (!handle_) throw Error(ErrorCode::kInvalidArgument, "tutti::torchx::Work: empty work");
  handle_.wait(timeout);
  result_ = finish_();
  finish_ = nullptr;  // drops the staging buffers
  return *result_;
}

Work allreduce_async(const std::string& name, torch::Tensor tensor, ReduceOp op,
                     const AsyncOptions& options, const Communicator& comm) {
  check_tensor(tensor, "tensor '" + name + "'");
  auto s = std::make_shared<Staged>(std::move(tensor));
  Handle h = comm.allreduce_async(name, s->buffer.data_ptr(), s->buffer.data_ptr(), s->count(),
                                  s->type(), op, options);
  return Work(std::move(h), [s] {
    s->finish();
    return s->target;
  });
}

Work broadcast_async(const std::string& name, torch::Tensor tensor, int root,
                     const Communicator& comm) {
  check_tensor(tensor, "tensor '" + name + "'");
  auto s = std::make_shared<Staged>(std::move(tensor));
  Handle h = comm.broadcast_async(name, s->buffer.data_ptr(), s->count(), s->type(), root);
  return Work(std::move(h), [s] {
    s->finish();
    return s->target;
  });
}

Work allgather_async(const std::string& name, const torch::Tensor& tensor,
                     const Communicator& comm) {
  check_tensor(tensor, "tensor '" + name + "'");
  if (tensor.dim() == 0)
    throw Error(ErrorCode::kInvalidArgument,
                "tutti::torchx: allgather of tensor '" + name +
                    "' needs at least one dimension (they are joined along dimension 0)");
  const torch::Tensor send = tensor.contiguous();
  const size_t rows = static_cast<size_t>(send.size(0));
  size_t row_count = 1;
  for (int64_t d = 1; d < send.dim(); ++d) row_count *= static_cast<size_t>(send.size(d));
  Handle h =
      comm.allgather_async(name, send.data_ptr(), rows, row_count, to_tutti(send.scalar_type()));
  return Work(h, [h, send] {
    const std::span<const std::byte> bytes = h.output();
    std::vector<int64_t> shape = send.sizes().vec();
    shape[0] = 0;
    for (uint64_t r : h.output_rows()) shape[0] += static_cast<int64_t>(r);
    torch::Tensor out = torch::empty(shape, send.options());
    if (static_cast<size_t>(out.nbytes()) != bytes.size())
      throw Error(ErrorCode::kInternal,
                  "tutti::torchx: allgather output size disagrees with its rows");
    if (!bytes.empty()) std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
    return out;
  });
}

}  // namespace tutti::torchx
