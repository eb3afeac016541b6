// group_wait_check MODE: group()'s wait for the other members in the store ends as a collective's
// waits do, on an abort, a dead member or a disagreement it can see, not at TUTTI_TIMEOUT:
//   sets   3 ranks: rank 0 lists {0, 1}, ranks 1 and 2 list {0, 1, 2}. Ranks 0 and 1 wait for each
//          other under different sets: both fail soon (kInvalidArgument) naming both lists. Rank 2
//          times out (the test sets TUTTI_TIMEOUT=6) naming what rank 0 called instead, while
//          ranks 0 and 1 stay alive.
//   die    2 ranks: rank 1 exits (_exit(1)) 2 s in without calling group: rank 0 fails soon
//          (kPeerFailure) naming rank 1.
//   abort  2 ranks: rank 0 aborts its world from a helper thread 1.5 s into group: it fails with
//          kAborted; rank 1 calls group 4 s in and fails soon with kAborted naming rank 0.
// Each rank that checks something prints "ok: ..." or "FAIL: ..." (a failure after more than 10 s
// of waiting fails, as does a group that succeeds).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tutti/tutti.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Runs group(ranks) and checks how it failed: within `within` seconds, with `code`, its message
// holding every string of `named`. Returns the process's exit status.
int expect_failure(tutti::Communicator& comm, const std::vector<int>& ranks, double within,
                   tutti::ErrorCode code, const std::vector<std::string>& named,
                   const std::string& what) {
  const int rank = comm.rank();
  const auto started = Clock::now();
  try {
    comm.group(ranks);
    std::printf("FAIL: rank %d: %s: group succeeded\n", rank, what.c_str());
    return 1;
  } catch (const tutti::Error& e) {
    const double waited = std::chrono::duration<double>(Clock::now() - started).count();
    const std::string text = e.what();
    bool all_named = true;
    for (const std::string& n : named) all_named = all_named && text.find(n) != std::string::npos;
    if (waited <= within && e.code() == code && all_named) {
      std::printf("ok: rank %d: %s: failed after %.1f s: %s\n", rank, what.c_str(), waited,
                  text.c_str());
      return 0;
    }
    std::printf("FAIL: rank %d: %s: code %d after %.1f s: %s\n", rank, what.c_str(),
                static_cast<int>(e.code()), waited, text.c_str());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "sets" && mode != "die" && mode != "abort") {
    std::fprintf(stderr, "usage: group_wait_check sets|die|abort\n");
    return 2;
  }
  tutti::World world;
  tutti::Communicator comm = world.communicator();
  const int rank = comm.rank();
  int status = 1;
  if (mode == "sets") {
    const std::vector<std::string> lists = {"called group with the ranks", "0,1,2", "0,1"};
    if (rank == 0)
      status = expect_failure(comm, {0, 1}, 10, tutti::ErrorCode::kInvalidArgument, lists, mode);
    else if (rank == 1)
      status = expect_failure(comm, {0, 1, 2}, 10, tutti::ErrorCode::kInvalidArgument, lists, mode);
    else
      status = expect_failure(comm, {0, 1, 2}, 20, tutti::ErrorCode::kTimeout,
                              {"rank 0's last group call listed 0,1"}, mode);
    // Alive until rank 2's wait has timed out: a rank that exits ends that wait sooner, naming it.
    if (rank != 2) std::this_thread::sleep_for(std::chrono::seconds(9));
  } else if (mode == "die") {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      _exit(1);
    }
    status = expect_failure(comm, {0, 1}, 10, tutti::ErrorCode::kPeerFailure, {"rank 1"}, mode);
  } else {
    std::thread helper;
    if (rank == 0) {
      helper = std::thread([&comm] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        comm.abort("the test's helper thread");
      });
      status = expect_failure(comm, {0, 1}, 10, tutti::ErrorCode::kAborted, {"rank 0"}, mode);
      helper.join();
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      status = expect_failure(comm, {0, 1}, 10, tutti::ErrorCode::kAborted, {"rank 0"}, mode);
    }
  }
  std::fflush(stdout);
  return status;
}
