// launcher_gone_check: a rank whose launcher disappears. Writes its pid to DIR/<rank>.pid once
// joined, then either
//   calls    calls an allreduce every 100 ms; once one fails, prints how long after DIR/killed
//            appeared it failed and exits 0 by itself (the library must not end the process);
//   compute  never calls tutti again and spins until killed (orphan prevention must end it).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "tutti/tutti.hpp"

namespace {

double seconds_since_kill(const std::string& dir) {
  struct stat st {};
  if (stat((dir + "/killed").c_str(), &st) != 0) return -1;
  const auto killed = std::chrono::system_clock::time_point(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
  return std::chrono::duration<double>(std::chrono::system_clock::now() - killed).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s calls|compute DIR\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  tutti::Communicator& world = tutti::init();
  std::ofstream(fmt::format("{}/{}.pid", dir, world.rank())) << getpid() << "\n";
  if (mode == "compute") {
    volatile uint64_t x = 0;
    for (;;) x = x + 1;
  }
  for (int i = 0; i < 6000; ++i) {
    float v = 1;
    try {
      world.allreduce(&v, &v, 1, tutti::DataType::kFloat32, tutti::ReduceOp::kSum);
    } catch (const tutti::Error& e) {
      const double after = seconds_since_kill(dir);
      std::ofstream(fmt::format("{}/{}.result", dir, world.rank()))
          << fmt::format("{} {:.3f} {}\n", static_cast<int>(e.code()), after, e.what());
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::ofstream(fmt::format("{}/{}.result", dir, world.rank())) << "no error in 600 s\n";
  return 1;
}
