// chaos_check STEPS STEP_MS: one rank of an elastic job that chaos.sh hits with kills and stops at
// random moments (during steps, shrinks, state syncs). Every step allreduces a one-hot vector over
// the world's ranks (this rank's slot 1), which must come back as exactly the members of the
// communicator the step ran on: no slot but 0 or 1, this rank among them, as many as the
// communicator's size, and the same members as the step before unless a recovery came between.
// The total adds sum(member + 1) per step; the state (step, total) is committed after every step,
// so a recovery redoes nothing twice. At the end the survivors must agree on total and members.
// Prints "pid R P" at the start, "recovery R S" (seconds from the last step to the reset) at each
// reset, and "DONE members=... steps=S total=T" or "FAIL: ..." at the end.
// CHAOS_SYNC_VICTIM=R: world rank R dies inside the state sync of its first recovery (after the
// sync's first broadcast), a second fault in the middle of the first one's recovery.
// CHAOS_REGROUP_VICTIM=M: member M dies at the commit that learns the job grew, before it meets the
// new membership (which the launcher must then abandon).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tutti/elastic.hpp"
#include "tutti/tutti.hpp"

namespace {

using Clock = std::chrono::steady_clock;
// Member ids a job that grows may use (chaos.sh starts at most 6 ranks and adds 2).
constexpr int kMaxMembers = 16;

class ChaosState : public tutti::elastic::State {
 public:
  ChaosState(std::span<int64_t> first, bool victim, bool regroup_victim)
      : first_(first), victim_(victim), regroup_victim_(regroup_victim) {}
  void commit() override {
    try {
      tutti::elastic::State::commit();
    } catch (const tutti::elastic::MembershipChanged&) {
      // Gone the moment the launcher published a membership with more ranks: it never meets
      // the others there, and the launcher must abandon it.
      if (regroup_victim_) {
        std::printf("dies as the job grows\n");
        std::fflush(stdout);
        _exit(3);
      }
      throw;
    }
  }
  void sync(const tutti::Communicator& comm, int root) override {
    if (victim_) {
      comm.broadcast(first_.data(), first_.size_bytes(), tutti::DataType::kUInt8, root);
      std::printf("dies inside the state sync\n");
      std::fflush(stdout);
      _exit(3);
    }
    tutti::elastic::State::sync(comm, root);
  }

 private:
  std::span<int64_t> first_;
  bool victim_;
  bool regroup_victim_;
};

std::string list(const std::vector<int64_t>& slots) {
  std::string out;
  for (size_t r = 0; r < slots.size(); ++r)
    if (slots[r] == 1) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

int run(int64_t steps, int step_ms) {
  tutti::World world_holder;
  const tutti::Communicator world = world_holder.communicator();
  // Slots by member id in a job that grows (members come and go; ids are never reused), by world
  // rank otherwise.
  const char* member = std::getenv("TUTTI_MEMBER_ID");
  const int me = member != nullptr ? std::atoi(member) : world.rank();
  const int world_size = member != nullptr ? kMaxMembers : world.size();
  if (me >= world_size) {
    std::printf("FAIL: member id %d is beyond the %d this check counts\n", me, world_size);
    return 1;
  }
  std::printf("pid %d %d\n", me, static_cast<int>(::getpid()));
  std::fflush(stdout);
  const char* sync_victim = std::getenv("CHAOS_SYNC_VICTIM");
  int64_t step = 0, total = 0;
  const char* regroup_victim = std::getenv("CHAOS_REGROUP_VICTIM");
  ChaosState state(std::span<int64_t>(&step, 1),
                   sync_victim != nullptr && std::atoi(sync_victim) == me,
                   regroup_victim != nullptr && std::atoi(regroup_victim) == me);
  state.add("step", std::span<int64_t>(&step, 1));
  state.add("total", std::span<int64_t>(&total, 1));
  Clock::time_point last_step = Clock::now();
  bool recovered = true;  // the first step has no step before it to compare members with
  state.on_reset([&](const tutti::Communicator& c) {
    std::printf("recovery %d %.3f (%d ranks)\n", me,
                std::chrono::duration<double>(Clock::now() - last_step).count(), c.size());
    std::fflush(stdout);
    recovered = true;
  });
  state.commit();
  std::vector<int64_t> members(static_cast<size_t>(world_size), 0), before;
  tutti::Communicator last = tutti::elastic::run(world, state, [&](const tutti::Communicator& c) {
    for (; step < steps;) {
      std::vector<int64_t> slots(static_cast<size_t>(world_size), 0);
      slots[static_cast<size_t>(me)] = 1;
      c.allreduce(slots.data(), slots.data(), slots.size(), tutti::DataType::kInt64,
                  tutti::ReduceOp::kSum);
      int count = 0;
      int64_t sum = 0;
      for (size_t r = 0; r < slots.size(); ++r) {
        if (slots[r] != 0 && slots[r] != 1)
          throw tutti::Error(tutti::ErrorCode::kInternal,
                             "slot " + std::to_string(r) + " holds " + std::to_string(slots[r]));
        count += static_cast<int>(slots[r]);
        sum += slots[r] * static_cast<int64_t>(r + 1);
      }
      if (slots[static_cast<size_t>(me)] != 1 || count != c.size() ||
          (!recovered && slots != before))
        throw tutti::Error(tutti::ErrorCode::kInternal,
                           "step " + std::to_string(step) + " ran with members " + list(slots) +
                               " on a communicator of " + std::to_string(c.size()) +
                               " (the step before: " + list(before) + ")");
      before = slots;
      recovered = false;
      members = slots;
      total += sum;
      ++step;
      last_step = Clock::now();
      state.commit();
      if (step == 1) {
        std::printf("started %d\n", me);
        std::fflush(stdout);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    }
  });
  // Every survivor must hold the same total and members.
  std::vector<int64_t> mine{total, -total};
  last.allreduce(mine.data(), mine.data(), 2, tutti::DataType::kInt64, tutti::ReduceOp::kMax);
  if (mine[0] != total || -mine[1] != total) {
    std::printf("FAIL: rank %d: total %lld, the survivors' range %lld..%lld\n", me,
                static_cast<long long>(total), static_cast<long long>(-mine[1]),
                static_cast<long long>(mine[0]));
    return 1;
  }
  std::printf("DONE members=%s steps=%lld total=%lld\n", list(members).c_str(),
              static_cast<long long>(step), static_cast<long long>(total));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::printf("FAIL: usage: chaos_check STEPS STEP_MS\n");
    return 2;
  }
  try {
    return run(std::atoll(argv[1]), std::atoi(argv[2]));
  } catch (const tutti::Error& e) {
    // Below --min-np this is the one clear failure chaos.sh wants; a wrong member list is not.
    std::printf("%s: %s\n", e.code() == tutti::ErrorCode::kInternal ? "FAIL" : "stopped", e.what());
    return 1;
  }
}
