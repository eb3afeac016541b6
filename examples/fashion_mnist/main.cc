// fashion_mnist: data-parallel Fashion-MNIST training on libtorch with tutti's
// DistributedOptimizer, with checkpoints and resume. Run by tuttirun:
//
//   tuttirun -np 4 -- build/bin/fashion_mnist --epochs 1 --checkpoint /shared/fmnist.ckpt
//
// Every rank trains on its shard of each epoch (a permutation seeded by seed + epoch, split
// round-robin as torch's DistributedSampler does); rank 0 prints progress, saves checkpoints and
// evaluates on the test set at the end.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "checkpoint.hpp"
#include "checkpoint_file.hpp"
#include "idx.hpp"
#include "model.hpp"
#include "tutti/torch.hpp"

namespace fmnist = fashion_mnist;
namespace tx = tutti::torchx;

namespace {

struct Args {
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string model = "cnn";
  int epochs = 1;
  int batch_size = 32;
  double lr = 0.03;
  double momentum = 0.9;
  uint64_t seed = 1;
  std::string checkpoint;
  int checkpoint_every = 100;
  int64_t max_steps = 0;
  int log_every = 50;
  int threads = 1;
  int backward_passes = 1;
  std::string compression = "none";
  std::string weights_out;
  std::string pid_dir;
  int sleep_ms = 0;
};

// Dataset tensors: images N x 1 x 28 x 28, normalized; labels N (int64).
struct Data {
  torch::Tensor images;
  torch::Tensor labels;
};

Data to_tensors(const fmnist::Split& split) {
  const int64_t n = split.images.dims[0];
  torch::Tensor raw = torch::from_blob(const_cast<uint8_t*>(split.images.bytes.data()),
                                       {n, 1, 28, 28}, torch::kUInt8);
  torch::Tensor labels =
      torch::from_blob(const_cast<uint8_t*>(split.labels.bytes.data()), {n}, torch::kUInt8);
  // Fashion-MNIST's mean and standard deviation.
  return {(raw.to(torch::kFloat32) / 255.0 - 0.2860) / 0.3530, labels.to(torch::kInt64)};
}

// This rank's sample indices for `epoch`: one permutation on every rank, padded by wrapping to a
// multiple of the world size, then every size-th index from `rank` on. Every rank gets the same
// count, so every rank runs the same number of steps.
torch::Tensor shard_of(int64_t n, int64_t epoch, uint64_t seed, int rank, int size) {
  auto gen = at::detail::createCPUGenerator(seed + static_cast<uint64_t>(epoch));
  torch::Tensor perm = torch::randperm(n, gen, torch::kInt64);
  const int64_t per_rank = (n + size - 1) / size;
  const int64_t padded = per_rank * size;
  if (padded > n) perm = torch::cat({perm, perm.slice(0, 0, padded - n)});
  return perm.slice(0, rank, padded, size);
}

// A bitwise hash of every parameter: equal on two ranks only if their weights are identical.
int64_t weights_checksum(const torch::nn::Module& model) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& p : model.parameters()) {
    torch::Tensor c = p.contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    for (size_t i = 0; i < c.nbytes(); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return static_cast<int64_t>(h);
}

double evaluate(torch::nn::Sequential& model, const Data& test, int64_t* correct_out) {
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0;
  const int64_t n = test.images.size(0);
  for (int64_t at = 0; at < n; at += 1000) {
    torch::Tensor logits = model->forward(test.images.slice(0, at, std::min(n, at + 1000)));
    correct +=
        logits.argmax(1).eq(test.labels.slice(0, at, std::min(n, at + 1000))).sum().item<int64_t>();
  }
  model->train();
  *correct_out = correct;
  return 100.0 * static_cast<double>(correct) / static_cast<double>(n);
}

tx::Compression compression_of(const std::string& s) {
  if (s == "none") return tx::Compression::kNone;
  if (s == "fp16") return tx::Compression::kFloat16;
  if (s == "bf16") return tx::Compression::kBFloat16;
  throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                     "fashion_mnist: --compression must be none, fp16 or bf16, not '" + s + "'");
}

// Rank 0 checks that checkpoints can be saved where --checkpoint says and loads the newest usable
// one into its model and optimizer; then every rank takes rank 0's model, optimizer and progress.
// A checkpoint that cannot be used or saved ends every rank with rank 0's message (status -1),
// before any step, rather than leaving the others waiting or stopping at the first save.
fmnist::Progress resume(const Args& args, const tutti::Communicator& comm,
                        torch::nn::Sequential& model, torch::optim::Optimizer& optimizer) {
  int64_t message[3] = {0, 0, 0};  // status (1 resumed, 0 fresh, -1 failed), epoch, step
  std::string error;
  if (comm.rank() == 0 && !args.checkpoint.empty()) {
    try {
      fmnist::check_checkpoint_path(args.checkpoint);
      fmnist::Progress p;
      auto used = fmnist::load_newest_checkpoint(
          args.checkpoint,
          [&](const std::string& payload) {
            p = fmnist::load_training_state(payload, *model, optimizer);
          },
          [](const std::string& note) { fmt::print(stderr, "fashion_mnist: {}\n", note); });
      if (used) {
        message[0] = 1;
        message[1] = p.epoch;
        message[2] = p.step;
        fmt::print("resuming from {} at epoch {} step {}\n", *used, p.epoch, p.step);
      }
    } catch (const std::exception& e) {
      message[0] = -1;
      error = e.what();
    }
  }
  comm.broadcast(message, 3, tutti::DataType::kInt64, 0);
  if (message[0] < 0) {
    // Every rank says why, not only that rank 0 failed: rank 0's message goes to all.
    int64_t length = static_cast<int64_t>(error.size());
    comm.broadcast(&length, 1, tutti::DataType::kInt64, 0);
    error.resize(static_cast<size_t>(length));
    comm.broadcast(error.data(), error.size(), tutti::DataType::kUInt8, 0);
    throw tutti::Error(tutti::ErrorCode::kInvalidArgument,
                       comm.rank() == 0 ? error : "rank 0: " + error);
  }
  tx::broadcast_parameters(*model, 0, comm);
  tx::broadcast_optimizer_state(optimizer, 0, comm);
  return {message[1], message[2]};
}

int train(const Args& args) {
  tutti::World world;
  const tutti::Communicator& comm = world.communicator();
  const int rank = comm.rank(), size = comm.size();
  if (!args.pid_dir.empty())
    std::ofstream(fmt::format("{}/{}.pid", args.pid_dir, rank)) << getpid();
  torch::set_num_threads(args.threads);
  // --threads above 1 with several ranks on a host: keep libgomp's spinning workers from taking
  // the CPUs the ranks' collectives need (tutti/torch_openmp.hpp).
  if (const tx::OpenMpFit fit = tx::fit_openmp_to_host(comm); fit.throttled && rank == 0)
    fmt::print("fashion_mnist: {}\n", fit.note);
  torch::manual_seed(args.seed);

  const Data train_data = to_tensors(fmnist::read_split(args.data, "train"));
  torch::nn::Sequential model = fmnist::make_model(args.model);
  torch::optim::SGD sgd(model->parameters(),
                        torch::optim::SGDOptions(args.lr).momentum(args.momentum));
  tx::DistributedOptimizerOptions options;
  options.backward_passes_per_step = args.backward_passes;
  options.compression = compression_of(args.compression);
  tx::DistributedOptimizer optimizer(sgd, model->named_parameters(), options, comm);

  fmnist::Progress progress = resume(args, comm, model, sgd);
  const int64_t n = train_data.images.size(0);
  const int64_t per_rank = (n + size - 1) / size;
  const int64_t micro = args.batch_size;  // each backward pass's batch
  const int64_t per_step = micro * args.backward_passes;
  const int64_t steps_per_epoch = (per_rank + per_step - 1) / per_step;
  if (rank == 0)
    fmt::print("fashion_mnist: {} ranks, model {}, {} epoch(s) of {} steps, batch {} per rank{}\n",
               size, args.model, args.epochs, steps_per_epoch, per_step,
               args.checkpoint.empty() ? "" : ", checkpoint " + args.checkpoint);
  // At once, not with the first progress line: under tuttirun stdout is a pipe, which the C
  // library buffers, and the first 50 steps take tens of seconds on a small machine.
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  auto window_start = Clock::now();
  int64_t window_images = 0;
  bool stop = false;
  for (int64_t epoch = progress.epoch; epoch < args.epochs && !stop; ++epoch) {
    const torch::Tensor shard = shard_of(n, epoch, args.seed, rank, size);
    for (int64_t b = progress.step - epoch * steps_per_epoch; b < steps_per_epoch; ++b) {
      if (args.max_steps > 0 && progress.step >= args.max_steps) {
        stop = true;
        break;
      }
      optimizer.zero_grad();
      torch::Tensor loss;
      for (int pass = 0; pass < args.backward_passes; ++pass) {
        const int64_t from = b * per_step + pass * micro;
        const torch::Tensor idx =
            shard.slice(0, std::min(from, per_rank), std::min(from + micro, per_rank));
        if (idx.size(0) == 0) continue;
        loss = torch::nn::functional::cross_entropy(
            model->forward(train_data.images.index_select(0, idx)),
            train_data.labels.index_select(0, idx));
        loss.backward();
        window_images += idx.size(0);
      }
      optimizer.step();
      ++progress.step;
      progress.epoch = progress.step / steps_per_epoch;
      if (args.sleep_ms > 0) usleep(static_cast<useconds_t>(args.sleep_ms) * 1000);
      if (rank == 0 && (progress.step % args.log_every == 0 || b + 1 == steps_per_epoch)) {
        const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
        fmt::print("step {} (epoch {}/{}, {}/{}) loss {:.4f}, {:.0f} images/s\n", progress.step,
                   epoch + 1, args.epochs, b + 1, steps_per_epoch, loss.item<double>(),
                   static_cast<double>(window_images * size) / seconds);
        std::fflush(stdout);
        window_start = Clock::now();
        window_images = 0;
      }
      if (rank == 0 && !args.checkpoint.empty() && progress.step % args.checkpoint_every == 0) {
        fmnist::write_checkpoint_file(args.checkpoint,
                                      fmnist::save_training_state(*model, sgd, progress));
        fmt::print("checkpoint saved at step {}\n", progress.step);
        std::fflush(stdout);
      }
    }
  }

  // Every rank compares its weights with the others' before rank 0 spends time on the test set.
  const int64_t mine = weights_checksum(*model);
  std::vector<int64_t> all(static_cast<size_t>(size));
  comm.allgather(&mine, all.data(), 1, tutti::DataType::kInt64);
  for (int r = 0; r < size; ++r)
    if (all[static_cast<size_t>(r)] != all[0])
      throw tutti::Error(tutti::ErrorCode::kInternal,
                         fmt::format("fashion_mnist: rank {}'s weights differ from rank 0's", r));
  if (rank != 0) return 0;
  fmt::print("weights identical on all {} ranks (checksum {:016x}) after {} steps\n", size,
             static_cast<uint64_t>(mine), progress.step);
  if (!args.weights_out.empty()) {
    std::ofstream out(args.weights_out, std::ios::binary);
    for (const auto& p : model->parameters()) {
      torch::Tensor c = p.to(torch::kFloat32).contiguous();
      out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
    }
    if (!out) throw tutti::Error(tutti::ErrorCode::kSystem, "cannot write " + args.weights_out);
  }
  const Data test_data = to_tensors(fmnist::read_split(args.data, "t10k"));
  int64_t correct = 0;
  const double accuracy = evaluate(model, test_data, &correct);
  fmt::print("test accuracy: {:.2f}% ({}/{})\n", accuracy, correct, test_data.images.size(0));
  return 0;
}

}  // namespace

// CLI11's PositiveNumber says "not in range 0 to 1.79e308" for 0; a range from 1 says what is
// meant.
const CLI::Range kAtLeastOne(1, std::numeric_limits<int>::max());

// A learning rate or momentum: finite, and within [low, high) (NaN and inf fail here, not as a
// libtorch exception with a backtrace).
CLI::Validator finite_in(double low, double high, const std::string& what) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) return what + " '" + text + "' is not a number";
        } catch (const std::exception&) {
          return what + " '" + text + "' is not a number";
        }
        if (!std::isfinite(v) || v < low || v >= high)
          return fmt::format("{} {} must be finite, at least {} and below {}", what, text, low,
                             high);
        return "";
      },
      "");
}

int main(int argc, char** argv) {
  Args args;
  CLI::App app{"Fashion-MNIST on libtorch with tutti's DistributedOptimizer (run by tuttirun)"};
  app.add_option("--data", args.data, "folder of the *-idx?-ubyte.gz files");
  app.add_option("--model", args.model, "cnn or mlp")->check(CLI::IsMember({"cnn", "mlp"}));
  app.add_option("--epochs", args.epochs)->check(kAtLeastOne);
  app.add_option("--batch-size", args.batch_size, "per rank and backward pass")->check(kAtLeastOne);
  app.add_option("--lr", args.lr)->check(finite_in(1e-12, 1e6, "--lr"));
  app.add_option("--momentum", args.momentum)->check(finite_in(0, 1, "--momentum"));
  app.add_option("--seed", args.seed);
  app.add_option("--checkpoint", args.checkpoint, "save to and resume from this file");
  app.add_option("--checkpoint-every", args.checkpoint_every, "steps between checkpoints")
      ->check(kAtLeastOne);
  app.add_option("--max-steps", args.max_steps, "stop after this many steps in all (0: no limit)")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  app.add_option("--log-every", args.log_every, "steps between progress lines")->check(kAtLeastOne);
  app.add_option("--threads", args.threads, "torch threads per rank")->check(CLI::Range(1, 1024));
  app.add_option("--backward-passes", args.backward_passes,
                 "backward passes accumulated per step (backward_passes_per_step)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--compression", args.compression, "gradients on the wire: none, fp16, bf16")
      ->check(CLI::IsMember({"none", "fp16", "bf16"}));
  app.add_option("--weights-out", args.weights_out, "rank 0 writes the final weights (float32)");
  app.add_option("--pid-dir", args.pid_dir, "each rank writes DIR/<rank>.pid (tests)");
  app.add_option("--sleep-ms", args.sleep_ms, "pause after each step (tests: time to kill a rank)")
      ->check(CLI::Range(0, 3'600'000));
  CLI11_PARSE(app, argc, argv);
  try {
    return train(args);
  } catch (const c10::Error& e) {
    // libtorch's what() appends a C++ backtrace that tells a user nothing.
    fmt::print(stderr, "fashion_mnist: error: {}\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fashion_mnist: error: {}\n", e.what());
    return 1;
  }
}
