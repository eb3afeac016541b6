// window_wait_check MODE: the shared-memory window is mapped inside the first allreduce of a fresh
// dup (3 ranks on one host, TUTTI_ALGO=shm), and rank 2 never takes part. Its setup wait must end
// as the collective's own waits do, not after TUTTI_TIMEOUT:
//   abort  rank 1 aborts the dup from a helper thread 1.5 s into the call: rank 0 fails soon with
//          kAborted naming rank 1 (rank 2 sleeps, then leaves)
//   die    rank 2 exits (_exit(1)) 3 s in: ranks 0 and 1 fail soon naming it
// Rank 0 prints "ok: ... after N s" or "FAIL: ..." (a failure after more than 10 s fails).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tutti/tutti.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "abort" && mode != "die") {
    std::fprintf(stderr, "usage: window_wait_check abort|die\n");
    return 2;
  }
  tutti::World world;
  tutti::Communicator comm = world.communicator().dup();
  const int rank = comm.rank();
  if (rank == 2) {
    std::this_thread::sleep_for(std::chrono::seconds(mode == "die" ? 3 : 12));
    if (mode == "die") _exit(1);
    return 0;
  }
  std::thread helper;
  if (mode == "abort" && rank == 1)
    helper = std::thread([&comm] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      comm.abort("the test's helper thread");
    });
  std::vector<float> data(1 << 20, 1.0f);
  const auto started = std::chrono::steady_clock::now();
  int status = 1;
  try {
    comm.allreduce(data.data(), data.data(), data.size(), tutti::DataType::kFloat32,
                   tutti::ReduceOp::kSum);
    std::printf("FAIL: rank %d: the allreduce succeeded without rank 2\n", rank);
  } catch (const tutti::Error& e) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const std::string text = e.what();
    const bool named = mode == "abort" ? text.find("rank 1") != std::string::npos
                                       : text.find("rank 2") != std::string::npos;
    const bool code = mode == "abort" ? e.code() == tutti::ErrorCode::kAborted
                                      : e.code() == tutti::ErrorCode::kPeerFailure ||
                                            e.code() == tutti::ErrorCode::kAborted;
    if (waited < 10 && named && code) {
      std::printf("ok: rank %d: %s: failed after %.1f s: %s\n", rank, mode.c_str(), waited,
                  text.c_str());
      status = 0;
    } else {
      std::printf("FAIL: rank %d: %s: code %d after %.1f s: %s\n", rank, mode.c_str(),
                  static_cast<int>(e.code()), waited, text.c_str());
    }
  }
  std::fflush(stdout);
  if (helper.joinable()) helper.join();
  return status;
}
