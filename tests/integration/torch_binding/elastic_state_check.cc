// tutti::torchx::TorchState under tutti::elastic::run on real ranks (tuttirun --min-np, or
// --host-discovery-script). A small model with SGD and momentum trains STEPS steps, committing
// every EVERY steps; each member (TUTTI_MEMBER_ID, else its first rank) trains on batches that
// depend only on the step and the member, and the gradients are averaged over the world. With
// die:R:S the rank whose first rank is R exits hard at step S: the survivors roll the model and the
// momentum back to the last commit and redo the steps since with one member fewer. At the end every
// rank replays the training alone: the same model and optimizer, each step's gradient the mean over
// the members of the world that ran it (told by the resets, kept in the state so that joiners have
// it too). Its weights must match the trained ones (1e-5). Prints "DONE member M rank R of N steps
// S replay ok" (or "FAIL ...", exit 1).
//   tuttirun -np 3 --min-np 2 -- elastic_state_check 40 4 die:1:10 [sleep:MS]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tutti/torch.hpp"

namespace {

constexpr int64_t kMaxMembers = 16;
constexpr int64_t kMaxWorlds = 16;

torch::nn::Sequential make_model() {
  torch::manual_seed(7);
  return torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::Tanh(),
                               torch::nn::Linear(16, 1));
}

torch::optim::SGD make_optimizer(torch::nn::Sequential& model) {
  return torch::optim::SGD(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
}

std::pair<torch::Tensor, torch::Tensor> batch(int64_t step, int64_t member) {
  torch::Tensor x = (torch::arange(32, torch::kFloat32) * (0.37 * static_cast<double>(step + 1)) +
                     static_cast<double>(member))
                        .sin()
                        .reshape({4, 8});
  return {x, x.sum(1, true).sin()};
}

// The members of comm's world, as a bit mask.
int64_t members_of(const tutti::Communicator& comm, int64_t member) {
  torch::Tensor one_hot = torch::zeros({kMaxMembers}, torch::kInt64);
  one_hot[member] = 1;
  tutti::torchx::allreduce_(one_hot, tutti::ReduceOp::kSum, comm);
  int64_t mask = 0;
  for (int64_t m = 0; m < kMaxMembers; ++m)
    if (one_hot[m].item<int64_t>() != 0) mask |= int64_t{1} << m;
  return mask;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: elastic_state_check STEPS EVERY [die:R:S] [sleep:MS]\n");
    return 2;
  }
  const int64_t steps = std::atoll(argv[1]), every = std::atoll(argv[2]);
  int64_t victim = -1, die_at = -1, pause_ms = 0;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("die:", 0) == 0) std::sscanf(arg.c_str(), "die:%ld:%ld", &victim, &die_at);
    if (arg.rfind("sleep:", 0) == 0) pause_ms = std::atoll(arg.c_str() + 6);
  }
  torch::set_num_threads(1);
  tutti::World world;
  const char* member_text = std::getenv("TUTTI_MEMBER_ID");
  const int64_t member = member_text ? std::atoll(member_text) : world.communicator().rank();
  const char* epoch_text = std::getenv("TUTTI_ELASTIC_EPOCH");
  const bool newcomer = epoch_text != nullptr && std::string(epoch_text) != "0";

  auto model = make_model();
  auto opt = make_optimizer(model);
  int64_t step = 0;
  // (first step, member mask) of each world that trained; plain buffers of the state.
  std::vector<int64_t> world_starts(kMaxWorlds, 0), world_members(kMaxWorlds, 0);
  int64_t worlds = 0;
  tutti::torchx::TorchState state(*model, opt);
  state.add("step", std::span<int64_t>(&step, 1));
  state.add("worlds", std::span<int64_t>(&worlds, 1));
  state.add("world_starts", std::span<int64_t>(world_starts));
  state.add("world_members", std::span<int64_t>(world_members));
  const auto note_world = [&](const tutti::Communicator& comm) {
    world_starts[static_cast<size_t>(worlds)] = step;
    world_members[static_cast<size_t>(worlds)] = members_of(comm, member);
    ++worlds;
  };
  state.on_reset([&](const tutti::Communicator& comm) {
    note_world(comm);
    if (comm.rank() == 0)
      std::printf("reset: %d ranks from step %ld\n", comm.size(), static_cast<long>(step));
    std::fflush(stdout);
  });
  if (!newcomer) note_world(world.communicator());
  state.commit();

  tutti::Communicator last =
      tutti::elastic::run(world.communicator(), state, [&](const tutti::Communicator& comm) {
        while (step < steps) {
          if (member == victim && step == die_at) _exit(9);
          auto [x, y] = batch(step, member);
          opt.zero_grad();
          torch::mse_loss(model->forward(x), y).backward();
          for (auto& p : model->parameters()) {
            torch::Tensor g = p.grad();
            tutti::torchx::allreduce_(g, tutti::ReduceOp::kAvg, comm);
          }
          opt.step();
          ++step;
          if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
          if (step % every == 0) state.commit();
        }
      });

  auto replay = make_model();
  auto replay_opt = make_optimizer(replay);
  std::string history;
  for (int64_t w = 0; w < worlds; ++w) {
    const int64_t end = w + 1 < worlds ? world_starts[static_cast<size_t>(w + 1)] : steps;
    std::vector<int64_t> members;
    for (int64_t m = 0; m < kMaxMembers; ++m)
      if ((world_members[static_cast<size_t>(w)] >> m) & 1) members.push_back(m);
    history += " from " + std::to_string(world_starts[static_cast<size_t>(w)]) + ":";
    for (int64_t m : members) history += " " + std::to_string(m);
    for (int64_t s = world_starts[static_cast<size_t>(w)]; s < end; ++s) {
      replay_opt.zero_grad();
      torch::Tensor loss = torch::zeros({});
      for (int64_t m : members) {
        auto [x, y] = batch(s, m);
        loss = loss + torch::mse_loss(replay->forward(x), y);
      }
      (loss / static_cast<double>(members.size())).backward();
      replay_opt.step();
    }
  }
  double worst = 0;
  auto trained = model->parameters(), replayed = replay->parameters();
  for (size_t i = 0; i < trained.size(); ++i)
    worst = std::max(worst, (trained[i] - replayed[i]).abs().max().item<double>());
  const bool ok = worst <= 1e-5 && step == steps;
  std::printf("%s member %ld rank %d of %d steps %ld replay %s (%.2e; worlds%s)\n",
              ok ? "DONE" : "FAIL", static_cast<long>(member), last.rank(), last.size(),
              static_cast<long>(step), ok ? "ok" : "off", worst, history.c_str());
  return ok ? 0 : 1;
}
