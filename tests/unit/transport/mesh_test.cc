// Full meshes of 1..8 ranks (threads) over TCP, shared memory and both: every pair exchanges
// messages of 0, 1, odd and ring-exceeding sizes, once with receives posted first (in reverse
// order) and once with every message arriving before its receive (the unexpected path).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <barrier>

#include "bootstrap/memory_store.hpp"
#include "unit/transport/support/mesh_harness.hpp"

namespace tutti::transport {
namespace {

using test_support::Layout;

// The last size exceeds the test ring (64 KiB) many times and, for small worlds, the 4 MiB socket
// buffers too; bigger worlds use less so the suite stays quick on two cores.
constexpr size_t kSizes[] = {0, 1, 7, 4097, (5 << 20) + 3};
constexpr size_t kBigWorldLargest = (1 << 20) + 3;

size_t message_size(size_t index, int world) {
  return index + 1 == std::size(kSizes) && world > 4 ? kBigWorldLargest : kSizes[index];
}

struct Exchange {
  std::vector<std::vector<std::vector<std::byte>>> out, in;  // [peer][size index]
};

Exchange make_exchange(int rank, int size) {
  Exchange x;
  x.out.resize(size);
  x.in.resize(size);
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    for (size_t i = 0; i < std::size(kSizes); ++i) {
      x.out[p].push_back(test_support::pattern(rank, p, message_size(i, size)));
      x.in[p].emplace_back(message_size(i, size));
    }
  }
  return x;
}

void post_receives(Transport& t, Exchange& x, std::vector<Request>& requests) {
  for (int p = 0; p < t.size(); ++p) {
    if (p == t.rank()) continue;
    for (size_t i = std::size(kSizes); i-- > 0;)  // reverse of the send order
      requests.push_back(t.channel(p).irecv(make_tag(i, 3), x.in[p][i]));
  }
}

void post_sends(Transport& t, Exchange& x, std::vector<Request>& requests) {
  for (int p = 0; p < t.size(); ++p) {
    if (p == t.rank()) continue;
    for (size_t i = 0; i < std::size(kSizes); ++i)
      requests.push_back(t.channel(p).isend(make_tag(i, 3), x.out[p][i]));
  }
}

void check_received(const Transport& t, const Exchange& x) {
  for (int p = 0; p < t.size(); ++p) {
    if (p == t.rank()) continue;
    for (size_t i = 0; i < std::size(kSizes); ++i)
      if (x.in[p][i] != test_support::pattern(p, t.rank(), message_size(i, t.size())))
        throw std::runtime_error(fmt::format("rank {}: message of {} bytes from rank {} is corrupt",
                                             t.rank(), message_size(i, t.size()), p));
  }
}

class MeshTest : public ::testing::TestWithParam<std::tuple<int, Layout>> {};

TEST_P(MeshTest, EveryPairExchangesAllSizes) {
  auto [size, layout] = GetParam();
  bootstrap::MemoryStore store;
  std::string job = test_support::unique_job_id("mesh");
  std::barrier built(size);
  std::vector<std::string> leftovers;
  test_support::run_ranks_or_throw(size, [&](int rank) {
    auto config = test_support::mesh_config(rank, size, layout, job);
    auto t = connect_mesh(config, store, Deadline::after_seconds(30));
    ASSERT_EQ(t->rank(), rank);
    ASSERT_EQ(t->size(), size);
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      bool same_host = config.host_ids[p] == config.host_ids[rank];
      EXPECT_EQ(t->channel(p).kind(), same_host ? TransportKind::kShm : TransportKind::kTcp)
          << "rank " << rank << " -> " << p;
      EXPECT_EQ(t->channel(p).peer(), p);
    }
    built.arrive_and_wait();
    if (rank == 0) leftovers = test_support::leftover_segments(job);

    // Receives first: payloads land in the posted buffers.
    Exchange first = make_exchange(rank, size);
    std::vector<Request> requests;
    post_receives(*t, first, requests);
    post_sends(*t, first, requests);
    t->wait(requests, Deadline::after_seconds(60), "first exchange");
    check_received(*t, first);

    // Sends first, all complete before any receive is posted: everything is stashed.
    Exchange second = make_exchange(rank, size);
    std::vector<Request> sends, receives;
    post_sends(*t, second, sends);
    t->wait(sends, Deadline::after_seconds(60), "sends of the second exchange");
    post_receives(*t, second, receives);
    t->wait(receives, Deadline::after_seconds(60), "receives of the second exchange");
    check_received(*t, second);
    built.arrive_and_wait();  // nobody closes while a peer still reads
  });
  EXPECT_TRUE(leftovers.empty()) << "left in /dev/shm: " << leftovers.front();
  EXPECT_TRUE(test_support::leftover_segments(job).empty());
}

INSTANTIATE_TEST_SUITE_P(Worlds, MeshTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 6, 7, 8),
                                            ::testing::Values(Layout::kTcp, Layout::kShm,
                                                              Layout::kMixed)),
                         [](const auto& info) {
                           return fmt::format("{}_ranks_{}", std::get<0>(info.param),
                                              test_support::to_string(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace tutti::transport
