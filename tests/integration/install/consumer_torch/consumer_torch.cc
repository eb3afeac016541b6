// An installed-tree consumer of libtutti_torch: rank r allreduces a float32 tensor of r + 1 (sum:
// n(n+1)/2 everywhere). Prints one line per rank and exits 0 only if every element is right.
#include <cstdio>
#include <tutti/torch.hpp>

int main() {
  try {
    tutti::World world;
    const tutti::Communicator& comm = world.communicator();
    const int n = comm.size();
    torch::Tensor t = torch::full({64, 3}, static_cast<float>(comm.rank() + 1));
    tutti::torchx::allreduce_(t, tutti::ReduceOp::kSum, comm);
    const bool right = t.eq(static_cast<float>(n * (n + 1) / 2)).all().item<bool>();
    std::printf("consumer_torch: rank %d of %d: allreduce %s (first %g)\n", comm.rank(), n,
                right ? "correct" : "WRONG", t[0][0].item<float>());
    return right ? 0 : 1;
  } catch (const tutti::Error& e) {
    std::fprintf(stderr, "consumer_torch: %s\n", e.what());
    return 1;
  }
}
