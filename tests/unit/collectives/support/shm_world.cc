#include "unit/collectives/support/shm_world.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <string>
#include <thread>

#include "bootstrap/memory_store.hpp"
#include "core/error.hpp"
#include "transport/mesh.hpp"

namespace tutti::testing {

collectives::Context ShmRank::context(double timeout_seconds) {
  return collectives::Context(
      collectives::Group{transport, rank, size, 64 << 10, scratch, {}, nullptr, settings},
      {++sequence, Deadline::after_seconds(timeout_seconds)});
}

std::vector<std::exception_ptr> run_shm_world(int size, size_t window_bytes,
                                              const std::function<void(ShmRank&)>& body) {
  static std::atomic<int> worlds{0};
  const std::string job = fmt::format("shmworld-{}-{}", getpid(), worlds++);
  bootstrap::MemoryStore store;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(size));
  std::barrier done(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<transport::Transport> t;
      try {
        transport::MeshConfig c;
        c.rank = r;
        c.size = size;
        c.host_ids.assign(static_cast<size_t>(size), "one-host");
        c.job_id = job;
        c.job_token = "token";
        c.listen_address = "127.0.0.1";
        c.options.shm_ring_bytes = 64 << 10;
        c.options.shm_window_bytes = window_bytes;
        t = transport::connect_mesh(c, store, Deadline::after_seconds(60));
        collectives::Scratch scratch;
        ShmRank rank{r, size, *t, scratch};
        body(rank);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        if (t) t->abort_all(fmt::format("rank {} failed in the test body", r));
      }
      done.arrive_and_wait();
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace tutti::testing
