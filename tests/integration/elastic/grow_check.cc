// Ranks that join a running job (tuttirun --host-discovery-script, --max-np): every rank trains
// `steps` steps under tutti::elastic::run, committing after each; a step adds the world's size
// (an allreduce of ones) to a running total. Ranks that join take the state from rank 0, so every
// rank ends with the same total and the same step count, whatever the memberships were. Each rank
// prints "DONE member M rank R of N steps S total T" at the end.
//
//   grow_check STEPS [STEP_MS] [fail | die:M:S]   (fail: a rank that joined exits 3 at once, for
//   blacklisting; die:M:S: member M exits 9 at step S, for the wait below --min-np)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tutti/elastic.hpp"
#include "tutti/tutti.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: grow_check STEPS [STEP_MS] [fail]\n");
    return 2;
  }
  const int64_t steps = std::atoll(argv[1]);
  const int step_ms = argc > 2 ? std::atoi(argv[2]) : 20;
  const bool fail_joiner = argc > 3 && std::string(argv[3]) == "fail";
  long victim = -1, die_at = -1;
  if (argc > 3 && std::string(argv[3]).rfind("die:", 0) == 0)
    std::sscanf(argv[3], "die:%ld:%ld", &victim, &die_at);
  const char* member = std::getenv("TUTTI_MEMBER_ID");
  const char* epoch = std::getenv("TUTTI_ELASTIC_EPOCH");
  if (fail_joiner && epoch != nullptr && std::atoi(epoch) > 0) {
    std::fprintf(stderr, "member %s: failing on purpose\n", member ? member : "?");
    return 3;
  }
  try {
    tutti::World world;
    int64_t step = 0;
    std::vector<int64_t> total(1, 0);
    tutti::elastic::State state;
    state.add("step", std::span<int64_t>(&step, 1));
    state.add("total", std::span<int64_t>(total));
    state.on_reset([&](const tutti::Communicator& c) {
      if (c.rank() == 0)
        std::printf(
            "reset: %d ranks from step %lld at %.3f\n", c.size(), static_cast<long long>(step),
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count());
      std::fflush(stdout);
    });
    state.commit();
    tutti::Communicator last =
        tutti::elastic::run(world.communicator(), state, [&](const tutti::Communicator& comm) {
          for (; step < steps;) {
            if (member != nullptr && std::atol(member) == victim && step == die_at) std::_Exit(9);
            int64_t one = 1, size = 0;
            comm.allreduce(&one, &size, 1, tutti::DataType::kInt64, tutti::ReduceOp::kSum);
            if (size != comm.size()) {
              std::printf("FAIL: allreduce of ones gave %lld on %d ranks\n",
                          static_cast<long long>(size), comm.size());
              std::exit(1);
            }
            total[0] += size;
            ++step;
            std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
            state.commit();
          }
        });
    std::printf("DONE member %s rank %d of %d steps %lld total %lld\n", member ? member : "-",
                last.rank(), last.size(), static_cast<long long>(step),
                static_cast<long long>(total[0]));
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::printf("FAIL: member %s: %s\n", member ? member : "-", e.what());
    return 1;
  }
  return 0;
}
