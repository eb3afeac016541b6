// broadcast_parameters and broadcast_optimizer_state: root's model and optimizer onto every rank.
#include <c10/util/StringUtil.h>

#include "optimizer_bytes.hpp"
#include "tutti/torch_state.hpp"

namespace tutti::torchx {
namespace {

// FNV-1a over the names, dtypes and shapes: equal lists give equal fingerprints on every rank.
class Fingerprint {
 public:
  void add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash_ = (hash_ ^ bytes[i]) * 0x100000001b3ull;
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }
  void add(int64_t v) { add(&v, sizeof v); }
  int64_t value() const { return static_cast<int64_t>(hash_); }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

// Every rank learns whether all ranks hold the same list; the ranks that differ from root are
// named in the error, which every rank throws (so none goes on to a mismatched broadcast).
void require_same_list(const std::vector<std::pair<std::string, torch::Tensor>>& named, int root,
                       const Communicator& comm) {
  Fingerprint f;
  f.add(static_cast<int64_t>(named.size()));
  for (const auto& [name, tensor] : named) {
    f.add(name);
    f.add(static_cast<int64_t>(tensor.scalar_type()));
    for (int64_t d : tensor.sizes()) f.add(d);
  }
  const int64_t mine = f.value();
  std::vector<int64_t> all(static_cast<size_t>(comm.size()));
  comm.allgather(&mine, all.data(), 1, DataType::kInt64);
  std::string differ;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] != all[static_cast<size_t>(root)])
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (!differ.empty())
    throw Error(ErrorCode::kMismatch,
                c10::str("tutti::torchx::broadcast_parameters: rank(s) ", differ,
                         " pass other tensors (names, shapes or dtypes) than root ", root, " (",
                         named.size(), " tensors here)"));
}

}  // namespace

void broadcast_parameters(const std::vector<std::pair<std::string, torch::Tensor>>& named_tensors,
                          int root, const Communicator& comm) {
  for (const auto& [name, tensor] : named_tensors) check_tensor(tensor, "parameter '" + name + "'");
  require_same_list(named_tensors, root, comm);
  for (const auto& [name, tensor] : named_tensors) {
    torch::Tensor t = tensor;  // shares storage: broadcast_ writes into the parameter itself
    broadcast_(t, root, comm);
  }
}

void broadcast_parameters(const torch::nn::Module& module, int root, const Communicator& comm) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : module.named_parameters()) named.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers()) named.emplace_back(item.key(), item.value());
  broadcast_parameters(named, root, comm);
}

void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root,
                               const Communicator& comm) {
  std::string bytes;
  int64_t size = 0;
  std::string root_error;
  if (comm.rank() == root) {
    try {
      bytes = save_optimizer(optimizer);
      size = static_cast<int64_t>(bytes.size());
    } catch (const std::exception& e) {
      root_error = e.what();
      size = -1;  // tells the others to fail too rather than wait for bytes that never come
    }
  }
  comm.broadcast(&size, 1, DataType::kInt64, root);
  if (size < 0)
    throw Error(
        ErrorCode::kInvalidArgument,
        c10::str("tutti::torchx::broadcast_optimizer_state: root ", root,
                 " could not save its optimizer", root_error.empty() ? "" : ": ", root_error));
  bytes.resize(static_cast<size_t>(size));
  comm.broadcast(bytes.data(), bytes.size(), DataType::kUInt8, root);
  if (comm.rank() == root) return;
  try {
    load_optimizer(optimizer, bytes);
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kMismatch,
                c10::str("tutti::torchx::broadcast_optimizer_state: root ", root,
                         "'s optimizer state does not fit rank ", comm.rank(),
                         "'s optimizer: ", e.what_without_backtrace()));
  }
}

}  // namespace tutti::torchx
