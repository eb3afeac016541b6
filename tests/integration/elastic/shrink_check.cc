// shrink_check MODE [VICTIMS]: the survivors of dead ranks go on (Communicator::shrink), under
// tuttirun --min-np so that the job outlives the dead:
//   die 2       every rank runs int64 sum allreduces; at step 5 the listed ranks _exit(3). The
//               others' call fails; they shrink and run 20 more steps among themselves, each sum
//               checked (the survivors' old ranks + 1), and say how long it took from the failure
//               to the first completed step (goal: 3 s).
//   twice 1,3   the first listed rank dies at step 5, the survivors shrink; the second dies at
//               step 10 of the shrunk communicator and they shrink again.
//   none        nobody dies: every rank shrinks at once and gets all ranks back.
//   late 2      nobody dies; the listed rank calls shrink only after TUTTI_TIMEOUT (the test sets
//               3 s): the others go on without it, and its own shrink fails with kTimeout.
//   c_api 2     as die, through tutti_comm_shrink and tutti_allreduce.
//   engine 2    as die, through the engine (allreduce_async + wait): a handle fails when rank 2
//               dies; the survivors shrink and the shrunk communicator's own engine runs 20 steps.
//   loop DIR    every rank writes DIR/<rank>.pid and runs steps (2 ms apart) until one fails,
//               whoever killed whom (the pods test kills a whole pod); then the survivors shrink,
//               learn who is left (an allgather of their world ranks) and run 50 checked steps.
//               Each prints the wall-clock time (epoch seconds) of its first completed step after
//               the shrink, for the test to compare with the moment it killed the pod.
// Each survivor prints "ok: rank R ..." or "FAIL: ...".
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tutti/tutti.h"
#include "tutti/tutti.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> parse_ranks(const char* text) {
  std::vector<int> out;
  std::string s = text == nullptr ? "" : text;
  for (size_t at = 0; at < s.size();) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::atoi(s.substr(at, comma - at).c_str()));
    at = comma + 1;
  }
  return out;
}

bool listed(const std::vector<int>& ranks, int r) {
  for (int x : ranks)
    if (x == r) return true;
  return false;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One step: an int64 sum of (world rank + 1) over the communicator's members, checked against
// `want`. Throws what the allreduce throws.
void step(const tutti::Communicator& comm, int64_t mine, int64_t want, int world_rank, int n) {
  int64_t v = mine;
  comm.allreduce(std::span<int64_t>(&v, 1), tutti::ReduceOp::kSum);
  if (v != want) {
    std::printf("FAIL: rank %d: step %d summed %lld, want %lld\n", world_rank, n,
                static_cast<long long>(v), static_cast<long long>(want));
    std::exit(1);
  }
}

int64_t sum_of(const std::vector<int>& alive) {
  int64_t s = 0;
  for (int r : alive) s += r + 1;
  return s;
}

// Runs `steps` checked steps over `alive` (world ranks, in order); the listed `victim` dies at
// step `die_at` (when it is this rank). Returns normally only when every step succeeded; throws
// the allreduce's error when a peer died.
void run_steps(const tutti::Communicator& comm, const std::vector<int>& alive, int world_rank,
               int steps, int victim, int die_at) {
  for (int n = 0; n < steps; ++n) {
    if (world_rank == victim && n == die_at) {
      std::fflush(stdout);
      _exit(3);
    }
    step(comm, world_rank + 1, sum_of(alive), world_rank, n);
  }
}

// The survivors' part after a failure: shrink, check the new ranks, then `steps` more steps.
tutti::Communicator shrink_and_check(const tutti::Communicator& comm, std::vector<int>& alive,
                                     const std::vector<int>& dead, int world_rank,
                                     Clock::time_point failed_at) {
  std::vector<int> still;
  for (int r : alive)
    if (!listed(dead, r)) still.push_back(r);
  alive = still;
  tutti::Communicator next = comm.shrink();
  const double shrunk = seconds_since(failed_at);
  int expected_rank = -1;
  for (size_t i = 0; i < alive.size(); ++i)
    if (alive[i] == world_rank) expected_rank = static_cast<int>(i);
  if (next.size() != static_cast<int>(alive.size()) || next.rank() != expected_rank) {
    std::printf("FAIL: rank %d: shrunk to rank %d of %d, want %d of %zu\n", world_rank, next.rank(),
                next.size(), expected_rank, alive.size());
    std::exit(1);
  }
  step(next, world_rank + 1, sum_of(alive), world_rank, 0);
  const double first = seconds_since(failed_at);
  std::printf("ok: rank %d: shrunk to rank %d of %d in %.3f s; first step after %.3f s\n",
              world_rank, next.rank(), next.size(), shrunk, first);
  if (first > 3.0) {
    std::printf("FAIL: rank %d: %.3f s from the failure to the first step (goal 3 s)\n", world_rank,
                first);
    std::exit(1);
  }
  return next;
}

int die_mode(const tutti::Communicator& world, const std::vector<int>& victims, bool twice) {
  const int rank = world.rank();
  std::vector<int> alive;
  for (int r = 0; r < world.size(); ++r) alive.push_back(r);
  tutti::Communicator comm = world;
  // Each listed victim in turn: the first on the world, the next on the first shrink's result.
  const size_t rounds = twice ? victims.size() : 1;
  for (size_t round = 0; round < rounds; ++round) {
    const std::vector<int> dying = twice ? std::vector<int>{victims[round]} : victims;
    const int victim = listed(dying, rank) ? rank : -1;
    Clock::time_point failed_at;
    try {
      run_steps(comm, alive, rank, 1000000, victim, 5 + 5 * static_cast<int>(round));
      std::printf("FAIL: rank %d: no step failed although rank(s) died\n", rank);
      return 1;
    } catch (const tutti::Error& e) {
      // With two victims, one may see the call fail before its own step to die: the other died
      // first and a survivor's abort reached it while it was still finishing the previous
      // collective (calls fail where the failure is seen, not at one agreed collective). It was
      // to die; it does, so that the survivors' expected membership holds.
      if (victim == rank) {
        std::fflush(stdout);
        _exit(3);
      }
      failed_at = Clock::now();
      std::printf("ok: rank %d: the call failed: %.160s\n", rank, e.what());
    }
    comm = shrink_and_check(comm, alive, dying, rank, failed_at);
  }
  run_steps(comm, alive, rank, 20, -1, -1);
  std::printf("ok: rank %d: 20 more steps on %d ranks\n", rank, comm.size());
  return 0;
}

int c_api_mode(const std::vector<int>& victims) {
  tutti_comm_t world = nullptr;
  if (tutti_comm_world(&world) != 0) {
    std::printf("FAIL: tutti_comm_world: %s\n", tutti_last_error());
    return 1;
  }
  const int rank = tutti_comm_rank(world);
  const int size = tutti_comm_size(world);
  int64_t want = 0, dead_sum = 0;
  for (int r = 0; r < size; ++r) want += r + 1;
  for (int v : victims) dead_sum += v + 1;
  int rc = 0;
  for (int n = 0; rc == 0; ++n) {
    if (listed(victims, rank) && n == 5) {
      std::fflush(stdout);
      _exit(3);
    }
    int64_t v = rank + 1;
    rc = tutti_comm_allreduce(world, &v, &v, 1, TUTTI_INT64, TUTTI_SUM);
    if (rc == 0 && v != want) {
      std::printf("FAIL: rank %d: summed %lld\n", rank, static_cast<long long>(v));
      return 1;
    }
    if (n > 100000) break;
  }
  if (rc == 0) {
    std::printf("FAIL: rank %d: no call failed\n", rank);
    return 1;
  }
  if (listed(victims, rank)) {  // as in die_mode: a victim whose call failed first still dies
    std::fflush(stdout);
    _exit(3);
  }
  std::printf("ok: rank %d: tutti_allreduce returned %d: %.120s\n", rank, rc, tutti_last_error());
  tutti_comm_t shrunk = nullptr;
  if (tutti_comm_shrink(world, &shrunk) != 0) {
    std::printf("FAIL: rank %d: tutti_comm_shrink: %s\n", rank, tutti_last_error());
    return 1;
  }
  const int new_size = tutti_comm_size(shrunk);
  for (int n = 0; n < 20; ++n) {
    int64_t v = rank + 1;
    if (tutti_comm_allreduce(shrunk, &v, &v, 1, TUTTI_INT64, TUTTI_SUM) != 0 ||
        v != want - dead_sum) {
      std::printf("FAIL: rank %d: after the shrink: %lld (%s)\n", rank, static_cast<long long>(v),
                  tutti_last_error());
      return 1;
    }
  }
  std::printf("ok: rank %d: tutti_comm_shrink gave %d ranks; 20 steps\n", rank, new_size);
  tutti_comm_free(shrunk);
  tutti_comm_free(world);
  return 0;
}

int engine_mode(const tutti::Communicator& world, const std::vector<int>& victims) {
  const int rank = world.rank();
  std::vector<int> alive;
  for (int r = 0; r < world.size(); ++r) alive.push_back(r);
  auto async_step = [&](const tutti::Communicator& comm, int n) {
    int64_t v = rank + 1;
    comm.allreduce_async("g", &v, &v, 1, tutti::DataType::kInt64, tutti::ReduceOp::kSum).wait();
    if (v != sum_of(alive)) {
      std::printf("FAIL: rank %d: async step %d summed %lld, want %lld\n", rank, n,
                  static_cast<long long>(v), static_cast<long long>(sum_of(alive)));
      std::exit(1);
    }
  };
  Clock::time_point failed_at;
  try {
    for (int n = 0;; ++n) {
      if (listed(victims, rank) && n == 5) {
        std::fflush(stdout);
        _exit(3);
      }
      async_step(world, n);
    }
  } catch (const tutti::Error& e) {
    if (listed(victims, rank)) {  // as in die_mode: a victim whose call failed first still dies
      std::fflush(stdout);
      _exit(3);
    }
    failed_at = Clock::now();
    std::printf("ok: rank %d: the handle failed: %.160s\n", rank, e.what());
  }
  std::vector<int> still;
  for (int r : alive)
    if (!listed(victims, r)) still.push_back(r);
  alive = still;
  tutti::Communicator rest = world.shrink();
  for (int n = 0; n < 20; ++n) async_step(rest, n);
  std::printf("ok: rank %d: 20 async steps on %d ranks, %.3f s after the failure\n", rank,
              rest.size(), seconds_since(failed_at));
  return 0;
}

int loop_mode(const tutti::Communicator& world, const std::string& pid_dir) {
  const int rank = world.rank();
  std::ofstream(pid_dir + "/" + std::to_string(rank) + ".pid") << getpid() << "\n";
  std::vector<int> all;
  for (int r = 0; r < world.size(); ++r) all.push_back(r);
  Clock::time_point failed_at;
  try {
    for (int n = 0;; ++n) {
      step(world, rank + 1, sum_of(all), rank, n);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  } catch (const tutti::Error& e) {
    failed_at = Clock::now();
    std::printf("ok: rank %d: the call failed: %.160s\n", rank, e.what());
  }
  tutti::Communicator rest = world.shrink();
  std::vector<int64_t> ranks(static_cast<size_t>(rest.size()));
  const int64_t mine = rank;
  rest.allgather(&mine, ranks.data(), 1, tutti::DataType::kInt64);
  const auto first_at = std::chrono::system_clock::now();
  std::vector<int> alive(ranks.begin(), ranks.end());
  for (size_t i = 1; i < alive.size(); ++i)
    if (alive[i] <= alive[i - 1]) {
      std::printf("FAIL: rank %d: the shrunk communicator's ranks are out of order\n", rank);
      return 1;
    }
  run_steps(rest, alive, rank, 50, -1, -1);
  std::printf("ok: rank %d: went on as rank %d of %d after %.3f s; first step at %.3f\n", rank,
              rest.rank(), rest.size(), seconds_since(failed_at),
              std::chrono::duration<double>(first_at.time_since_epoch()).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::vector<int> victims = parse_ranks(argc > 2 && mode != "loop" ? argv[2] : "");
  if (mode == "c_api") {
    if (tutti_init() != 0) {
      std::printf("FAIL: tutti_init: %s\n", tutti_last_error());
      return 1;
    }
    const int rc = c_api_mode(victims);
    tutti_finalize();
    return rc;
  }
  tutti::World world_holder;
  tutti::Communicator world = world_holder.communicator();
  const int rank = world.rank();
  try {
    if (mode == "die" || mode == "twice") return die_mode(world, victims, mode == "twice");
    if (mode == "loop") return loop_mode(world, argc > 2 ? argv[2] : ".");
    if (mode == "engine") return engine_mode(world, victims);
    if (mode == "none") {
      tutti::Communicator all = world.shrink();
      std::vector<int> alive;
      for (int r = 0; r < world.size(); ++r) alive.push_back(r);
      if (all.size() != world.size() || all.rank() != rank) {
        std::printf("FAIL: rank %d: shrink with nobody lost gave rank %d of %d\n", rank, all.rank(),
                    all.size());
        return 1;
      }
      run_steps(all, alive, rank, 10, -1, -1);
      std::printf("ok: rank %d: shrink with nobody lost kept %d ranks\n", rank, all.size());
      return 0;
    }
    if (mode == "late") {
      if (listed(victims, rank)) {
        std::this_thread::sleep_for(std::chrono::seconds(6));
        const auto started = Clock::now();
        try {
          world.shrink();
          std::printf("FAIL: rank %d: a late shrink succeeded\n", rank);
          return 1;
        } catch (const tutti::Error& e) {
          const bool right = e.code() == tutti::ErrorCode::kTimeout && seconds_since(started) < 2;
          std::printf("%s: rank %d: the late shrink failed at once: %.200s\n",
                      right ? "ok" : "FAIL", rank, e.what());
          return right ? 0 : 1;
        }
      }
      std::vector<int> alive;
      for (int r = 0; r < world.size(); ++r)
        if (!listed(victims, r)) alive.push_back(r);
      tutti::Communicator rest = world.shrink();
      if (rest.size() != static_cast<int>(alive.size())) {
        std::printf("FAIL: rank %d: shrink kept %d ranks, want %zu\n", rank, rest.size(),
                    alive.size());
        return 1;
      }
      run_steps(rest, alive, rank, 10, -1, -1);
      std::printf("ok: rank %d: went on with %d ranks without the late one\n", rank, rest.size());
      return 0;
    }
  } catch (const tutti::Error& e) {
    std::printf("FAIL: rank %d: %s\n", rank, e.what());
    return 1;
  }
  std::printf("FAIL: unknown mode '%s' (die, twice, none, late, c_api, engine, loop)\n",
              mode.c_str());
  return 2;
}
