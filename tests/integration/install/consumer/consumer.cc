// An installed-tree consumer in C++: rank r contributes (r + 1) * 0.5 at every index; the float64
// sum over n ranks is n(n+1)/4. Prints one line per rank and exits 0 only if every element is
// right.
#include <cstdio>
#include <span>
#include <tutti/tutti.hpp>
#include <vector>

int main() {
  try {
    tutti::World world;
    tutti::Communicator& comm = world.communicator();
    const int n = comm.size();
    std::vector<double> data(4096, (comm.rank() + 1) * 0.5);
    comm.allreduce(std::span<double>(data), tutti::ReduceOp::kSum);
    size_t wrong = 0;
    for (double v : data)
      if (v != n * (n + 1) / 4.0) ++wrong;
    std::printf("consumer_cxx: rank %d of %d: allreduce %s (first %g)\n", comm.rank(), n,
                wrong == 0 ? "correct" : "WRONG", data[0]);
    return wrong == 0 ? 0 : 1;
  } catch (const tutti::Error& e) {
    std::fprintf(stderr, "consumer_cxx: %s\n", e.what());
    return 1;
  }
}
