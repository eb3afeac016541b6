// tutti-demo: every rank contributes (rank + 1) * (i + 1) and checks the allreduced sum against the
// closed form, then prints one line. Run it with `tuttirun -np 4 build/bin/tutti-demo`.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tutti/tutti.hpp"

int main(int argc, char** argv) {
  size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1 << 20;
  try {
    tutti::World world;
    auto& comm = world.communicator();
    const int n = comm.size();
    std::vector<double> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = double(comm.rank() + 1) * double(i + 1);

    comm.allreduce(std::span<double>(data), tutti::ReduceOp::kSum);

    // sum over r of (r+1)(i+1) = (i+1) * n(n+1)/2
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i)
      if (data[i] != double(i + 1) * n * (n + 1) / 2) ++wrong;
    fmt::print(
        "rank {} of {} (local {} of {}): allreduce of {} doubles: {} (last element {} expected "
        "{})\n",
        comm.rank(), n, comm.local_rank(), comm.local_size(), count,
        wrong == 0 ? "correct" : "WRONG", count ? data[count - 1] : 0.0,
        double(count) * n * (n + 1) / 2);
    std::fflush(stdout);
    comm.barrier();
    return wrong == 0 ? 0 : 1;
  } catch (const tutti::Error& e) {
    fmt::print(stderr, "tutti-demo: {}\n", e.what());
    return 1;
  }
}
