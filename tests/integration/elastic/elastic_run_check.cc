// elastic_run_check MODE ...: tutti::elastic::State and run() with real deaths, under tuttirun
// --min-np.
//   train STEPS EVERY DEATHS   "weights" (1000 doubles) and "step" in a State committed at the top
//       of every EVERY-th step; a step subtracts the sum of (world rank + 1) over the members from
//       every weight (an int64-exact allreduce of doubles). DEATHS is rank@step,...: that rank
//       _exit(3)s at the top of that step. The survivors must end at STEPS with the weights a
//       rollback to the last commit before each death predicts, exactly (no step lost or counted
//       twice), and the reset callback must have run once per death with the shrunk size. "none":
//       nobody dies. rank@step:stop stops that rank (SIGSTOP) instead: tuttirun --hang-timeout
//       must end it and the others go on as for a death. rank@sync makes that rank die inside
//       the state sync of the recovery from the death before it (after the first of the sync's
//       broadcasts): the survivors must shrink again and go on from the same commit.
//       rank@reset:stop stops that rank right after the recovery from the death before it.
//   below STEPS EVERY DEATHS   as train, in a job whose deaths leave fewer ranks than its
//       --min-np: the survivors must fail at the last death, before another step, saying so, and
//       print "stopped: ..." instead of "ok".
//   sync   rank r fills its state with r and syncs from rank 1: everyone holds 1, commits too.
// Each rank that checks prints "ok: ..." or "FAIL: ...".
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
  bool stop = false;         // SIGSTOP instead of _exit
  bool in_sync = false;      // dies inside the sync of the recovery from the death before it
  bool after_reset = false;  // stops (SIGSTOP) right after that recovery, before any step
};

std::vector<Death> parse_deaths(const std::string& text) {
  std::vector<Death> out;
  if (text == "none") return out;
  for (size_t at = 0; at < text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    const size_t sign = item.find('@');
    Death d{std::atoi(item.substr(0, sign).c_str()), std::atoll(item.substr(sign + 1).c_str())};
    const std::string when = item.substr(sign + 1);
    d.stop = when.ends_with(":stop");
    d.in_sync = when == "sync";
    d.after_reset = when == "reset:stop";
    if (d.after_reset) d.in_sync = true;  // no step of its own: it goes with the death before it
    // Dying in a recovery's sync is dying at the step of the death recovered from.
    if (d.in_sync && !out.empty()) d.step = out.back().step;
    out.push_back(d);
    at = comma + 1;
  }
  return out;
}

// A State whose sync kills this rank partway, once a step death was recovered from: the state sync
// after a shrink, where a second fault used to end the whole job.
class TrapState : public tutti::elastic::State {
 public:
  TrapState(std::span<double> first, bool armed) : first_(first), armed_(armed) {}
  void sync(const tutti::Communicator& comm, int root) override {
    if (armed_) {
      // The sync's first broadcast, as State::sync makes it, then gone before the second.
      comm.broadcast(first_.data(), first_.size_bytes(), tutti::DataType::kUInt8, root);
      std::printf("rank dies inside the state sync\n");
      std::fflush(stdout);
      _exit(3);
    }
    tutti::elastic::State::sync(comm, root);
  }

 private:
  std::span<double> first_;
  bool armed_;
};

int train(const tutti::Communicator& world, int64_t steps, int64_t every,
          const std::vector<Death>& deaths, bool below) {
  const int rank = world.rank();
  std::vector<double> weights(1000, 0.0);
  int64_t step = 0;
  const bool dies_in_sync = std::any_of(deaths.begin(), deaths.end(), [&](const Death& d) {
    return d.in_sync && !d.after_reset && d.rank == rank;
  });
  TrapState state(std::span<double>(weights), dies_in_sync);
  state.add("weights", std::span<double>(weights));
  state.add("step", std::span<int64_t>(&step, 1));
  std::vector<int> reset_sizes;
  state.on_reset([&](const tutti::Communicator& c) { reset_sizes.push_back(c.size()); });
  // A rank that stops once it recovered, before the first step after: as the new lowest rank it
  // is the one the shrunk communicator's first collective waits for.
  const bool stops_after_reset = std::any_of(deaths.begin(), deaths.end(), [&](const Death& d) {
    return d.after_reset && d.rank == rank;
  });
  state.on_reset([&](const tutti::Communicator&) {
    if (!stops_after_reset) return;
    std::printf("rank stops itself (SIGSTOP) right after the recovery\n");
    std::fflush(stdout);
    raise(SIGSTOP);
    std::printf("FAIL: rank %d was let go on after SIGSTOP\n", rank);
    std::fflush(stdout);
    _exit(4);
  });
  state.commit();
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_step = Clock::now();
  double longest_recovery = 0;
  state.on_reset([&](const tutti::Communicator&) {
    longest_recovery =
        std::max(longest_recovery, std::chrono::duration<double>(Clock::now() - last_step).count());
  });
  tutti::Communicator last;
  try {
    last = tutti::elastic::run(world, state, [&](const tutti::Communicator& comm) {
      for (; step < steps; ++step) {
        for (const Death& d : deaths)
          if (d.rank == rank && d.step == step && !d.in_sync) {
            std::fflush(stdout);
            if (d.stop) {
              std::printf("rank stops itself (SIGSTOP) at step %lld\n",
                          static_cast<long long>(step));
              std::fflush(stdout);
              raise(SIGSTOP);
              // Reached only if someone lets it go on: it must not rejoin with stale state.
              std::printf("FAIL: rank %d was let go on after SIGSTOP\n", rank);
              std::fflush(stdout);
              _exit(4);
            }
            _exit(3);
          }
        if (step % every == 0) state.commit();
        double mine = rank + 1;
        comm.allreduce(&mine, &mine, 1, tutti::DataType::kFloat64, tutti::ReduceOp::kSum);
        for (double& w : weights) w -= mine;
        last_step = Clock::now();
      }
    });
  } catch (const tutti::Error& e) {
    // Below --min-np: the survivors stop at the last death, rolled back, before another step.
    const std::string what = e.what();
    // It failed in the step the last death left undone, and ran none after it.
    const int64_t last_death = deaths.empty() ? 0 : deaths.back().step;
    const bool said = what.find("fewer than the job's --min-np") != std::string::npos;
    std::printf("%s: rank %d: %s at step %lld (the last death at %lld): %s\n",
                below && said && step == last_death ? "stopped" : "FAIL", rank,
                below ? "stopped below --min-np" : "failed", static_cast<long long>(step),
                static_cast<long long>(last_death), e.what());
    return below && said && step == last_death ? 0 : 1;
  }
  if (below) {
    std::printf("FAIL: rank %d went on below the job's --min-np to step %lld\n", rank,
                static_cast<long long>(step));
    return 1;
  }
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
  // A recovery's reset runs once per death at a step, and once more for a rank that stopped after
  // a completed recovery (the survivors recover again from it).
  size_t step_deaths = 0;
  for (const Death& d : deaths) {
    if (!d.in_sync || d.after_reset) ++step_deaths;
    const int64_t committed = d.step / every * every;
    want -= static_cast<double>(committed - at) * sum();
    at = committed;
    std::erase(members, d.rank);
  }
  want -= static_cast<double>(steps - at) * sum();
  bool equal = true;
  for (double w : weights) equal = equal && w == want;
  // CHECK_MAX_RECOVERY=S: no recovery (from the last step to the reset) may take longer.
  const char* bound = std::getenv("CHECK_MAX_RECOVERY");
  const bool quick_enough = bound == nullptr || longest_recovery <= std::atof(bound);
  // One reset per recovery: a death inside a recovery's sync makes that recovery shrink again.
  const bool resets_right = reset_sizes.size() == step_deaths &&
                            (deaths.empty() || reset_sizes.back() == last.size()) &&
                            last.size() == static_cast<int>(members.size());
  std::printf(
      "%s: rank %d: step %lld of %lld, weights %.0f (want %.0f), %zu reset(s), "
      "finished on %d ranks; longest recovery %.3f s\n",
      equal && step == steps && resets_right && quick_enough ? "ok" : "FAIL", rank,
      static_cast<long long>(step), static_cast<long long>(steps), weights[0], want,
      reset_sizes.size(), last.size(), longest_recovery);
  return equal && step == steps && resets_right && quick_enough ? 0 : 1;
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
    if ((mode == "train" || mode == "below") && argc > 4)
      return train(world, std::atoll(argv[2]), std::atoll(argv[3]), parse_deaths(argv[4]),
                   mode == "below");
    if (mode == "sync") return sync(world);
  } catch (const tutti::Error& e) {
    std::printf("FAIL: rank %d: %s\n", world.rank(), e.what());
    return 1;
  }
  std::printf(
      "FAIL: usage: elastic_run_check train|below STEPS EVERY rank@step[:stop]|rank@sync,... | "
      "sync\n");
  return 2;
}
