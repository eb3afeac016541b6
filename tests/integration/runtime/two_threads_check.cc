// two_threads_check: two threads of every rank drive the same communicator at once, which the API
// forbids. It must be refused with an error (kInvalidArgument naming the other thread), never a
// crash or a wrong sum: thread A runs large allreduces while thread B keeps trying small ones.
// B only tries while A is inside a call, so nearly all its tries are refused; one that slips in
// between A's calls is a stray call the peer does not make, which may then fail later calls with
// an error (mismatch, peer failure) - an error is fine, a crash or a wrong sum is not. Prints
// "refused N" and exits 0 when no sum was wrong and at least one call was refused, or, on a rank
// where a stray call got in first, the communicator failed with such an error instead.
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "tutti/tutti.hpp"

int main() {
  tutti::World world;
  tutti::Communicator& comm = world.communicator();
  const int size = comm.size();
  std::atomic<bool> done{false};
  std::atomic<bool> a_in_call{false};
  std::atomic<int> refused{0}, bad{0}, failed{0};

  auto check = [&](const tutti::Error& e) {
    if (e.code() == tutti::ErrorCode::kInvalidArgument &&
        std::string(e.what()).find("another thread") != std::string::npos)
      ++refused;
    else if (e.code() == tutti::ErrorCode::kMismatch || e.code() == tutti::ErrorCode::kPeerFailure ||
             e.code() == tutti::ErrorCode::kAborted)
      ++failed;  // a stray call got in: the communicator is broken, as documented
  };

  std::thread a([&] {
    std::vector<float> big(4 << 20);
    auto big_allreduce = [&] {
      std::fill(big.begin(), big.end(), 1.0f);
      try {
        a_in_call = true;
        comm.allreduce(big.data(), big.data(), big.size(), tutti::DataType::kFloat32,
                       tutti::ReduceOp::kSum);
        a_in_call = false;
        if (big.front() != static_cast<float>(size) || big.back() != static_cast<float>(size)) {
          std::printf("rank %d: WRONG: large allreduce gave %g\n", comm.rank(),
                      static_cast<double>(big.back()));
          ++bad;
        }
      } catch (const tutti::Error& e) {
        a_in_call = false;
        check(e);
      }
    };
    // On a loaded machine thread B may get no CPU while A is in a call: go on in rounds until
    // every rank has seen a refusal (all ranks agree through an allreduce), at most 10 rounds.
    for (int round = 0; round < 10; ++round) {
      for (int i = 0; i < 20; ++i) big_allreduce();
      float more = refused.load() == 0 ? 1.0f : 0.0f;
      try {
        a_in_call = true;
        comm.allreduce(&more, &more, 1, tutti::DataType::kFloat32, tutti::ReduceOp::kMax);
        a_in_call = false;
      } catch (const tutti::Error& e) {
        a_in_call = false;
        check(e);
        break;
      }
      if (more == 0.0f) break;
    }
    done = true;
  });
  std::thread b([&] {
    while (!done) {
      if (!a_in_call) continue;
      float x = 1;
      try {
        comm.allreduce(&x, &x, 1, tutti::DataType::kFloat32, tutti::ReduceOp::kSum);
        if (x != static_cast<float>(size)) {
          std::printf("rank %d: WRONG: small allreduce gave %g\n", comm.rank(),
                      static_cast<double>(x));
          ++bad;
        }
      } catch (const tutti::Error& e) {
        check(e);
      }
    }
  });
  a.join();
  b.join();
  std::printf("rank %d: refused %d, failed %d, bad %d\n", comm.rank(), refused.load(),
              failed.load(), bad.load());
  return (refused > 0 || failed > 0) && bad == 0 ? 0 : 1;
}
