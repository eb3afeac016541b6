// tutti's DistributedOptimizer on ResNet-50's 161 parameter sizes with negligible compute, the
// C++ half of the PyTorch integration's performance target (against bench/torch_gloo_bench.py
// --case resnet50, PyTorch's gloo with one all_reduce per tensor). Run by tuttirun:
//
//   tuttirun -np 4 -- build/bin/torch_optimizer_bench [--steps 10] [--rounds 5]
//
// A step is what a trainer does: backward() of a loss that touches every parameter once (its
// gradient is added into .grad: one pass over the gradient's memory, the least autograd does), then
// step(). The optimizer's own update is a no-op so that the gradient sync is what is measured.
// Prints steps/s, the median of the rounds, each round timed on the slowest rank; with
// --compute-only the same loop without any allreduce.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>

#include "engine_bench.hpp"
#include "tutti/torch.hpp"

namespace {

// Applies nothing: the bench measures the gradient sync, not SGD's arithmetic.
class NoUpdate : public torch::optim::Optimizer {
 public:
  explicit NoUpdate(std::vector<torch::Tensor> params)
      : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                  std::make_unique<torch::optim::SGDOptions>(0.0)) {}
  torch::Tensor step(LossClosure = nullptr) override { return {}; }
};

// A loss term that costs nothing forward (it never reads the parameter) and whose gradient is the
// incoming scalar expanded to the parameter's shape: autograd's cheapest way to hand a full-size
// gradient to the parameter's accumulator, which adds it into .grad (one pass over the memory).
struct FreeTouch : torch::autograd::Function<FreeTouch> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& p) {
    ctx->saved_data["sizes"] = p.sizes().vec();
    return torch::zeros({});
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {grads[0].expand(ctx->saved_data["sizes"].toIntVector())};
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 10, rounds = 5;
  bool compute_only = false;
  std::string compression = "none";
  CLI::App app{"DistributedOptimizer steps/s on ResNet-50's parameter sizes"};
  app.add_option("--steps", steps, "steps per round")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "rounds (the median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--compression", compression, "none, fp16 or bf16");
  app.add_flag("--compute-only", compute_only, "the same steps without DistributedOptimizer");
  CLI11_PARSE(app, argc, argv);
  try {
    tutti::World world;
    const tutti::Communicator& comm = world.communicator();
    torch::set_num_threads(1);
    std::vector<torch::Tensor> params;
    torch::OrderedDict<std::string, torch::Tensor> named;
    for (size_t n : tutti::bench::resnet50_parameter_sizes()) {
      params.push_back(torch::zeros({static_cast<int64_t>(n)}, torch::requires_grad()));
      named.insert(fmt::format("p{}", params.size() - 1), params.back());
    }
    NoUpdate inner(params);
    tutti::torchx::DistributedOptimizerOptions options;
    options.compression = compression == "fp16"   ? tutti::torchx::Compression::kFloat16
                          : compression == "bf16" ? tutti::torchx::Compression::kBFloat16
                                                  : tutti::torchx::Compression::kNone;
    std::optional<tutti::torchx::DistributedOptimizer> dist;
    if (!compute_only) dist.emplace(inner, named, options, comm);
    // Gradients accumulate into the same buffers from step to step (no zero_grad: with a no-op
    // update their values do not matter), so a step's compute is one pass over each gradient.
    const auto step = [&] {
      torch::Tensor loss = torch::zeros({});
      for (const auto& p : params) loss = loss + FreeTouch::apply(p);
      loss.backward();
      if (dist)
        dist->step();
      else
        inner.step();
    };
    const auto timed = [&] {
      comm.barrier();
      const auto start = std::chrono::steady_clock::now();
      for (int s = 0; s < steps; ++s) step();
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      comm.allreduce(&t, &t, 1, tutti::DataType::kFloat64, tutti::ReduceOp::kMax);
      return steps / t;
    };
    step();  // warm-up: the engine's setup, the response cache, the gradient buffers
    std::vector<double> rates;
    for (int r = 0; r < rounds; ++r) rates.push_back(timed());
    if (comm.rank() == 0) {
      double elements = 0;
      for (const auto& p : params) elements += static_cast<double>(p.numel());
      fmt::print(
          "# torch_optimizer_bench: {} tensors ({:.1f} MiB float32), {} ranks, {} steps x {} "
          "rounds, medians\n",
          params.size(), elements * 4 / (1 << 20), comm.size(), steps, rounds);
      fmt::print("  {:<40} {:>12.2f}\n",
                 compute_only ? "(compute only) steps/s"
                              : fmt::format("DistributedOptimizer ({}) steps/s", compression),
                 median(rates));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "torch_optimizer_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
