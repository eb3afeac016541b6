#include "unit/collectives/support/thread_ranks.hpp"

#include <fmt/format.h>

#include <memory>
#include <thread>

#include "unit/collectives/support/thread_channel.hpp"

namespace tutti::testing {

collectives::Context Rank::context(size_t segment_bytes, double timeout_seconds) {
  return collectives::Context(collectives::Group{transport, rank, size, segment_bytes, scratch},
                              {++sequence, Deadline::after_seconds(timeout_seconds)});
}

std::vector<std::exception_ptr> run_ranks(int size, const std::function<void(Rank&)>& body) {
  ThreadWorld world(size);
  std::vector<std::exception_ptr> failures(static_cast<size_t>(size));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        std::vector<std::unique_ptr<transport::Channel>> channels(static_cast<size_t>(size));
        for (int peer = 0; peer < size; ++peer) {
          if (peer != r)
            channels[static_cast<size_t>(peer)] = std::make_unique<ThreadChannel>(world, r, peer);
        }
        transport::Transport transport(r, std::move(channels));
        collectives::Scratch scratch;
        Rank rank{r, size, transport, scratch};
        try {
          body(rank);
        } catch (const std::exception& e) {
          failures[static_cast<size_t>(r)] = std::current_exception();
          transport.abort_all(fmt::format("rank {} failed: {}", r, e.what()));
        }
      });
    }
  }
  return failures;
}

std::string describe_failures(const std::vector<std::exception_ptr>& failures) {
  std::string out;
  for (size_t r = 0; r < failures.size(); ++r) {
    if (!failures[r]) continue;
    try {
      std::rethrow_exception(failures[r]);
    } catch (const std::exception& e) {
      out += fmt::format("rank {}: {}\n", r, e.what());
    }
  }
  return out;
}

}  // namespace tutti::testing
