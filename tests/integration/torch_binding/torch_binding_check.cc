// libtutti_torch on real ranks (run by tuttirun). Modes:
//   ops        allreduce (sum, avg) on every dtype, broadcast, allgather (uneven rows),
//              non-contiguous tensors, the async calls, and the refusal of a complex tensor
//   optimizer  DistributedOptimizer: averaged gradients, backward_passes_per_step, fp16/bf16
//              compression, an unused parameter, misuse errors; broadcast_parameters and
//              broadcast_optimizer_state
//   mismatch   ranks whose models differ in shape: step() fails with kMismatch, never hangs
//   compare A B TOL   two float32 weight files agree to TOL (max abs difference)
// Each check prints "FAIL ..." and the program exits 1 when it does not hold.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tutti/torch.hpp"

namespace tx = tutti::torchx;

namespace {

// The key of a parameter in an optimizer's state: its TensorImpl's address, as text in libtorch
// 1.13, as the pointer itself in 2.x.
template <typename Key>
Key state_key(const torch::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << param.unsafeGetTensorImpl();
    return text.str();
  } else {
    return param.unsafeGetTensorImpl();
  }
}

int failures = 0;
int rank = 0, size = 1;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    fmt::print("[rank {}] FAIL {}\n", rank, what);
  }
}

bool close(const torch::Tensor& a, const torch::Tensor& b, double tol) {
  return a.sizes() == b.sizes() &&
         (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() <= tol;
}

// Expects `body` to throw tutti::Error whose message contains `needle`.
template <typename Body>
void expect_error(Body&& body, const std::string& needle, const std::string& what) {
  try {
    body();
    expect(false, what + ": no error");
  } catch (const tutti::Error& e) {
    expect(std::string(e.what()).find(needle) != std::string::npos,
           what + ": message '" + e.what() + "' lacks '" + needle + "'");
  }
}

// A tensor every rank can predict: (rank + 1) * (i % 5 + 1).
torch::Tensor pattern(int r, torch::ScalarType type, int64_t n = 37) {
  return ((torch::arange(n) % 5 + 1) * (r + 1)).to(type);
}

void check_ops(const tutti::Communicator& comm) {
  const int64_t rank_sum = int64_t{size} * (size + 1) / 2;
  const torch::ScalarType all_types[] = {torch::kFloat32,  torch::kFloat64, torch::kFloat16,
                                         torch::kBFloat16, torch::kInt32,   torch::kInt64,
                                         torch::kInt16,    torch::kInt8,    torch::kUInt8};
  for (torch::ScalarType type : all_types) {
    const std::string name = c10::toString(type);
    torch::Tensor t = pattern(rank, type);
    tx::allreduce_(t, tutti::ReduceOp::kSum, comm);
    expect(close(t, (torch::arange(37) % 5 + 1) * rank_sum, 0) && t.scalar_type() == type,
           "allreduce sum " + name);
    torch::Tensor m = pattern(rank, type);
    tx::allreduce_(m, tutti::ReduceOp::kMax, comm);
    expect(close(m, pattern(size - 1, torch::kInt64), 0), "allreduce max " + name);
    if (torch::isFloatingType(type)) {
      torch::Tensor a = pattern(rank, type);
      tx::allreduce_(a, tutti::ReduceOp::kAvg, comm);
      const double tol = type == torch::kBFloat16 ? 0.05 : type == torch::kFloat16 ? 0.01 : 1e-6;
      expect(close(a, (torch::arange(37) % 5 + 1).to(torch::kFloat64) * (size + 1) / 2.0, tol),
             "allreduce avg " + name);
    }
    torch::Tensor b = pattern(rank, type);
    tx::broadcast_(b, size - 1, comm);
    expect(close(b, pattern(size - 1, type), 0), "broadcast " + name);
  }
  // bool: sum is logical or.
  torch::Tensor flags = torch::zeros({8}, torch::kBool);
  flags[rank % 8] = true;
  tx::allreduce_(flags, tutti::ReduceOp::kSum, comm);
  expect(flags.sum().item<int64_t>() == std::min(size, 8), "allreduce bool");

  // Non-contiguous: a transposed view and a strided slice, written back in place.
  torch::Tensor base = torch::arange(12, torch::kFloat32).reshape({3, 4}) * (rank + 1);
  torch::Tensor view = base.t();
  expect(!view.is_contiguous(), "the transposed view is non-contiguous");
  tx::allreduce_(view, tutti::ReduceOp::kSum, comm);
  expect(close(base, torch::arange(12, torch::kFloat32).reshape({3, 4}) * rank_sum, 0),
         "allreduce of a transposed view writes through to its base");
  torch::Tensor strided_base = torch::full({10}, static_cast<float>(rank));
  torch::Tensor every_other = strided_base.slice(0, 0, 10, 2);
  tx::broadcast_(every_other, 0, comm);
  expect(close(strided_base.slice(0, 0, 10, 2), torch::zeros({5}), 0) &&
             close(strided_base.slice(0, 1, 10, 2), torch::full({5}, float(rank)), 0),
         "broadcast of a strided slice touches only its elements");

  // allgather: rank r gives r + 1 rows of 3.
  torch::Tensor rows = torch::full({rank + 1, 3}, static_cast<double>(rank));
  torch::Tensor gathered = tx::allgather(rows, comm);
  std::vector<torch::Tensor> want;
  for (int r = 0; r < size; ++r) want.push_back(torch::full({r + 1, 3}, static_cast<double>(r)));
  expect(close(gathered, torch::cat(want), 0), "allgather with uneven rows");

  // Async: three in flight at once, waited in reverse order.
  torch::Tensor x = pattern(rank, torch::kFloat32, 1000);
  torch::Tensor y = torch::full({5, 5}, float(rank)).t();
  tx::Work wx = tx::allreduce_async("check.x", x, tutti::ReduceOp::kSum, {}, comm);
  tx::Work wy = tx::broadcast_async("check.y", y, 0, comm);
  tx::Work wg = tx::allgather_async("check.g", torch::full({2}, int32_t(rank)), comm);
  torch::Tensor g = wg.wait();
  y = wy.wait();
  torch::Tensor xr = wx.wait();
  expect(xr.is_same(x) && close(x, (torch::arange(1000) % 5 + 1) * rank_sum, 0), "allreduce_async");
  expect(close(y, torch::zeros({5, 5}), 0), "broadcast_async of a non-contiguous tensor");
  expect(g.numel() == 2 * size && g[2 * size - 1].item<int>() == size - 1, "allgather_async");
  expect(wx.wait().is_same(x), "a second wait() returns the same tensor");

  // Refusals, naming the tensor.
  expect_error(
      [&] {
        tx::allreduce_async("check.complex", torch::zeros({3}, torch::kComplexFloat),
                            tutti::ReduceOp::kSum, {}, comm);
      },
      "tensor 'check.complex' has dtype ComplexFloat", "complex refused by name");
  torch::Tensor c = torch::zeros({2, 2}, torch::kComplexDouble);
  expect_error([&] { tx::allreduce_(c, tutti::ReduceOp::kSum, comm); },
               "tensor of shape [2, 2] and dtype ComplexDouble", "complex refused (blocking)");
  expect_error([&] { tx::to_tutti(torch::kQInt8, "q"); }, "q has dtype QInt8", "qint8 refused");
}

// A tiny linear model whose gradients every rank can recompute alone.
struct Tiny {
  torch::nn::Linear fc{torch::nn::LinearOptions(4, 3)};
  torch::nn::Linear unused{torch::nn::LinearOptions(2, 2)};
  torch::OrderedDict<std::string, torch::Tensor> named() const {
    torch::OrderedDict<std::string, torch::Tensor> d;
    for (const auto& p : fc->named_parameters()) d.insert("fc." + p.key(), p.value());
    for (const auto& p : unused->named_parameters()) d.insert("unused." + p.key(), p.value());
    return d;
  }
  std::vector<torch::Tensor> params() const {
    auto p = fc->parameters();
    for (auto& q : unused->parameters()) p.push_back(q);
    return p;
  }
};

torch::Tensor batch_for(int r, int pass) {
  torch::manual_seed(1000 + r * 10 + pass);
  return torch::randn({5, 4});
}

// fc's weight gradient of one pass of rank r, computed locally (no hooks involved).
torch::Tensor local_grad(const Tiny& m, int r, int pass) {
  torch::Tensor w = m.fc->weight.detach().clone().requires_grad_(true);
  torch::Tensor bias = m.fc->bias.detach();
  (torch::nn::functional::linear(batch_for(r, pass), w, bias).pow(2)).sum().backward();
  return w.grad();
}

// The expected gradient: mean over ranks of the sum over passes (divided by passes if asked).
torch::Tensor expected_grad(const Tiny& m, int passes, bool average_passes) {
  torch::Tensor want = torch::zeros({3, 4});
  for (int r = 0; r < size; ++r)
    for (int p = 0; p < passes; ++p) want += local_grad(m, r, p);
  return want / size / (average_passes ? passes : 1);
}

void check_optimizer(const tutti::Communicator& comm) {
  struct Case {
    std::string name;
    int passes;
    bool average;
    tx::Compression compression;
    double tol;
  };
  const Case cases[] = {{"plain", 1, false, tx::Compression::kNone, 1e-6},
                        {"passes3", 3, false, tx::Compression::kNone, 1e-5},
                        {"passes2avg", 2, true, tx::Compression::kNone, 1e-6},
                        {"fp16", 1, false, tx::Compression::kFloat16, 2e-2},
                        {"bf16", 2, false, tx::Compression::kBFloat16, 2e-1}};
  for (const Case& c : cases) {
    torch::manual_seed(7);  // the same initial weights on every rank
    Tiny m;
    torch::optim::SGD sgd(m.params(), torch::optim::SGDOptions(0.1));
    tx::DistributedOptimizerOptions o;
    o.backward_passes_per_step = c.passes;
    o.average_aggregated_gradients = c.average;
    o.compression = c.compression;
    o.name_prefix = c.name + ".";
    tx::DistributedOptimizer opt(sgd, m.named(), o, comm);
    const torch::Tensor want = expected_grad(m, c.passes, c.average);
    const torch::Tensor before = m.fc->weight.detach().clone();
    opt.zero_grad();
    for (int p = 0; p < c.passes; ++p) m.fc->forward(batch_for(rank, p)).pow(2).sum().backward();
    opt.step();
    expect(close(m.fc->weight.grad(), want, c.tol) &&
               m.fc->weight.grad().scalar_type() == torch::kFloat32,
           c.name + ": the step's gradient is the mean over ranks (max diff " +
               std::to_string((m.fc->weight.grad() - want).abs().max().item<double>()) + ")");
    expect(close(m.fc->weight.detach(), before - 0.1 * m.fc->weight.grad(), 1e-6),
           c.name + ": step() applied the averaged gradient");
    expect(close(m.unused->weight.grad(), torch::zeros({2, 2}), 0),
           c.name + ": an unused parameter took part with zeros");
  }

  // Misuse: a second backward before step(), and zero_grad() in flight, are refused clearly.
  {
    torch::manual_seed(7);
    Tiny m;
    torch::optim::SGD sgd(m.params(), torch::optim::SGDOptions(0.1));
    tx::DistributedOptimizerOptions o;
    o.name_prefix = "misuse.";
    tx::DistributedOptimizer opt(sgd, m.named(), o, comm);
    m.fc->forward(batch_for(rank, 0)).sum().backward();
    expect_error([&] { m.fc->forward(batch_for(rank, 0)).sum().backward(); }, "produced again",
                 "second backward before step()");
    expect_error([&] { opt.zero_grad(); }, "zero_grad() while the gradient", "zero_grad in flight");
    opt.synchronize();  // and it recovers
    opt.zero_grad();
    expect_error(
        [] {
          torch::optim::SGD s({torch::zeros({1}, torch::requires_grad())}, 0.1);
          tx::DistributedOptimizerOptions bad;
          bad.backward_passes_per_step = 0;
          tx::DistributedOptimizer d(s, torch::OrderedDict<std::string, torch::Tensor>(), bad);
        },
        "backward_passes_per_step must be at least 1", "bad backward_passes_per_step");
  }

  // broadcast_parameters: different weights everywhere become root's.
  {
    torch::manual_seed(100 + rank);
    Tiny m;
    tx::broadcast_parameters(*m.fc, 0, comm);
    torch::Tensor w = m.fc->weight.detach().clone();
    torch::Tensor root_w = w.clone();
    tx::broadcast_(root_w, 0, comm);
    torch::manual_seed(100);
    Tiny root_model;
    expect(close(w, root_model.fc->weight.detach(), 0),
           "broadcast_parameters gives root's weights");
    if (size > 1) {
      std::vector<std::pair<std::string, torch::Tensor>> list = {{"w", m.fc->weight}};
      if (rank == 1) list.emplace_back("extra", m.fc->bias);
      expect_error([&] { tx::broadcast_parameters(list, 0, comm); }, "rank(s) 1 pass other tensors",
                   "broadcast_parameters with a different list on rank 1");
    }
  }

  // broadcast_optimizer_state: root's Adam state (after one local step) and lr on every rank.
  {
    torch::manual_seed(7);
    Tiny m;
    torch::optim::Adam adam(m.fc->parameters(), torch::optim::AdamOptions(rank == 0 ? 0.01 : 0.5));
    if (rank == 0) {
      m.fc->forward(batch_for(0, 0)).sum().backward();
      adam.step();
    }
    tx::broadcast_optimizer_state(adam, 0, comm);
    tx::broadcast_parameters(*m.fc, 0, comm);
    expect(adam.param_groups()[0].options().get_lr() == 0.01, "root's lr everywhere");
    const auto key = state_key<std::decay_t<decltype(adam.state())>::key_type>(m.fc->weight);
    const bool has = adam.state().count(key) == 1;
    expect(has, "Adam state exists on every rank after the broadcast");
    if (has) {
      auto& s = static_cast<torch::optim::AdamParamState&>(*adam.state()[key]);
      torch::Tensor avg = s.exp_avg().clone();
      torch::Tensor root_avg = avg.clone();
      tx::broadcast_(root_avg, 0, comm);
      expect(s.step() == 1 && close(avg, root_avg, 0), "Adam exp_avg and step equal root's");
    }
  }
}

// Rank 1 builds its model with another shape: the same gradient names with other sizes. step()
// must fail on every rank with kMismatch naming the gradient, promptly, and never hang.
void check_mismatch(const tutti::Communicator& comm) {
  torch::manual_seed(7);
  torch::nn::Linear fc(torch::nn::LinearOptions(4, rank == 1 ? 5 : 3));
  torch::optim::SGD sgd(fc->parameters(), torch::optim::SGDOptions(0.1));
  tx::DistributedOptimizer opt(sgd, fc->named_parameters(), {}, comm);
  fc->forward(torch::ones({2, 4})).sum().backward();
  const auto start = std::chrono::steady_clock::now();
  try {
    opt.step();
    expect(size == 1, "a step with mismatched gradient sizes succeeded");
  } catch (const tutti::Error& e) {
    expect(e.code() == tutti::ErrorCode::kMismatch,
           std::string("the error is not kMismatch: ") + e.what());
    expect(std::string(e.what()).find("grad.") != std::string::npos,
           std::string("the error does not name the gradient: ") + e.what());
    fmt::print("[rank {}] step() failed as it should: {}\n", rank, e.what());
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect(took < 10, fmt::format("the mismatch took {:.1f} s to fail", took));
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "compare" && argc == 5) {
    const auto a = read_floats(argv[2]), b = read_floats(argv[3]);
    const double tol = std::stod(argv[4]);
    double worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
    if (a.empty() || a.size() != b.size() || worst > tol) {
      fmt::print("FAIL weights differ: {} vs {} floats, max abs difference {:g} (tolerance {:g})\n",
                 a.size(), b.size(), worst, tol);
      return 1;
    }
    fmt::print("ok: {} weights agree, max abs difference {:g}\n", a.size(), worst);
    return 0;
  }
  if (mode != "ops" && mode != "optimizer" && mode != "mismatch") {
    fmt::print(stderr, "usage: torch_binding_check ops|optimizer|mismatch|compare A B TOL\n");
    return 2;
  }
  try {
    tutti::World world;
    const tutti::Communicator& comm = world.communicator();
    rank = comm.rank();
    size = comm.size();
    if (mode == "ops") check_ops(comm);
    if (mode == "optimizer") check_optimizer(comm);
    if (mode == "mismatch") check_mismatch(comm);
  } catch (const std::exception& e) {
    fmt::print("[rank {}] FAIL unexpected error: {}\n", rank, e.what());
    return 1;
  }
  if (failures) return 1;
  fmt::print("[rank {}] ok: {} on {} ranks\n", rank, mode, size);
  return 0;
}
