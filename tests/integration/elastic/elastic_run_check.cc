// elastic_run_check MODE ...: tutti::elastic::State and run() with real deaths, under tuttirun
// --min-np.
//   train STEPS EVERY DEATHS   "weights" (1000 doubles) and "step" in a State committed at the top
//       of every EVERY-th step; a step subtracts the sum of (world rank + 1) over the members from
//       every weight (an int64-exact allreduce of doubles). DEATHS is rank@step,...: that rank
//       _exit(3)s at the top of that step. The survivors must end at STEPS with the weights a
//       rollback to the last commit before each death predicts, exactly (no step lost or counted
//       twice), and the reset callback must have run once per death with the shrunk size. "none":
//       nobody dies.
//   sync   rank r fills its state with r and syncs from rank 1: everyone holds 1, commits too.
// Each rank that checks prints "ok: ..." or "FAIL: ...".
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tutti/elastic.hpp"
#include "tutti/tutti.hpp"

namespace {

struct Death {
  int rank;
  int64_t step;
};

std::vector<Death> parse_deaths(const std::string& text) {
  std::vector<Death> out;
  if (text == "none") return out;
  for (size_t at = 0; at < text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    const size_t sign = item.find('@');
    out.push_back(
        {std::atoi(item.substr(0, sign).c_str()), std::atoll(item.substr(sign + 1).c_str())});
    at = comma + 1;
  }
  return out;
}

int train(const tutti::Communicator& world, int64_t steps, int64_t every,
          const std::vector<Death>& deaths) {
  const int rank = world.rank();
  std::vector<double> weights(1000, 0.0);
  int64_t step = 0;
  tutti::elastic::State state;
  state.add("weights", std::span<double>(weights));
  state.add("step", std::span<int64_t>(&step, 1));
  std::vector<int> reset_sizes;
  state.on_reset([&](const tutti::Communicator& c) { reset_sizes.push_back(c.size()); });
  state.commit();
  tutti::Communicator last =
      tutti::elastic::run(world, state, [&](const tutti::Communicator& comm) {
        for (; step < steps; ++step) {
          for (const Death& d : deaths)
            if (d.rank == rank && d.step == step) {
              std::fflush(stdout);
              _exit(3);
            }
          if (step % every == 0) state.commit();
          double mine = rank + 1;
          comm.allreduce(&mine, &mine, 1, tutti::DataType::kFloat64, tutti::ReduceOp::kSum);
          for (double& w : weights) w -= mine;
        }
      });
  // The prediction: members shrink at each death; a death at step D rolls back to the last
  // commit, floor(D / every) * every, and the steps from there run with the survivors.
  std::vector<int> members;
  for (int r = 0; r < world.size(); ++r) members.push_back(r);
  auto sum = [&] {
    double s = 0;
    for (int r : members) s += r + 1;
    return s;
  };
  double want = 0;
  int64_t at = 0;
  for (const Death& d : deaths) {
    const int64_t committed = d.step / every * every;
    want -= static_cast<double>(committed - at) * sum();
    at = committed;
    std::erase(members, d.rank);
  }
  want -= static_cast<double>(steps - at) * sum();
  bool equal = true;
  for (double w : weights) equal = equal && w == want;
  const bool resets_right =
      reset_sizes.size() == deaths.size() && (deaths.empty() || reset_sizes.back() == last.size());
  std::printf(
      "%s: rank %d: step %lld of %lld, weights %.0f (want %.0f), %zu reset(s), "
      "finished on %d ranks\n",
      equal && step == steps && resets_right ? "ok" : "FAIL", rank, static_cast<long long>(step),
      static_cast<long long>(steps), weights[0], want, reset_sizes.size(), last.size());
  return equal && step == steps && resets_right ? 0 : 1;
}

int sync(const tutti::Communicator& world) {
  const int rank = world.rank();
  std::vector<int32_t> values(100, rank);
  tutti::elastic::State state;
  state.add("values", std::span<int32_t>(values));
  for (int i = 0; i <= rank; ++i) state.commit();  // rank r has r + 1 commits
  state.sync(world, 1);
  values.assign(values.size(), -7);
  state.restore();  // the commit is rank 1's too
  bool right = state.commits() == 2;
  for (int32_t v : values) right = right && v == 1;
  std::printf("%s: rank %d: after sync from rank 1: values %d, %llu commits\n",
              right ? "ok" : "FAIL", rank, values[0],
              static_cast<unsigned long long>(state.commits()));
  return right ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  tutti::World world_holder;
  const tutti::Communicator world = world_holder.communicator();
  try {
    if (mode == "train" && argc > 4)
      return train(world, std::atoll(argv[2]), std::atoll(argv[3]), parse_deaths(argv[4]));
    if (mode == "sync") return sync(world);
  } catch (const tutti::Error& e) {
    std::printf("FAIL: rank %d: %s\n", world.rank(), e.what());
    return 1;
  }
  std::printf("FAIL: usage: elastic_run_check train STEPS EVERY rank@step,... | sync\n");
  return 2;
}
