// communicators_check: many communicators per process, made by split, group and dup or from a
// caller's store, driven from several threads, aborted from a watchdog. Run under tuttirun; the
// first argument picks the scenario. Every result is checked exactly; the program prints "ok:"
// lines and exits 0, or prints "FAIL:" and exits 1.
#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "integration/support/check_report.hpp"
#include "tutti/tutti.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tutti::testing::fail;
using tutti::testing::g_failures;
using tutti::testing::g_rank;
using tutti::testing::ok;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n - 3;  // ".", ".." and the DIR's own fd
}

// Allreduce of rank-dependent values on `comm`; checks the sum exactly. `salt` varies the values.
template <typename T>
bool check_sum(const tutti::Communicator& comm, size_t count, int salt, const std::string& what) {
  std::vector<T> data(count);
  for (size_t i = 0; i < count; ++i)
    data[i] = static_cast<T>((comm.rank() + 1) * (static_cast<int>(i % 97) + salt));
  comm.allreduce(std::span<T>(data), tutti::ReduceOp::kSum);
  const int n = comm.size();
  for (size_t i = 0; i < count; ++i) {
    const T want = static_cast<T>(n * (n + 1) / 2 * (static_cast<int>(i % 97) + salt));
    if (data[i] != want) {
      fail(fmt::format("{}: element {} of {} is {} instead of {}", what, i, count,
                       static_cast<double>(data[i]), static_cast<double>(want)));
      return false;
    }
  }
  return true;
}

// Two threads per rank: one drives the world, the other a split, at the same time.
void threads(tutti::Communicator& world) {
  tutti::Communicator half = world.split(world.rank() % 2, world.rank());
  std::atomic<bool> wrong{false};
  std::thread a([&] {
    for (int i = 0; i < 40; ++i)
      if (!check_sum<float>(world, 1 + (i * 7919) % 300000, i, "world (thread A)")) wrong = true;
  });
  std::thread b([&] {
    for (int i = 0; i < 40; ++i)
      if (!check_sum<int64_t>(half, 1 + (i * 104729) % 200000, i + 3, "split (thread B)"))
        wrong = true;
  });
  a.join();
  b.join();
  if (!wrong) ok("two threads drove the world and a split at once, every sum exact");
}

void splits(tutti::Communicator& world) {
  const int n = world.size();
  const auto start = Clock::now();
  tutti::Communicator parity = world.split(world.rank() % 2, world.rank());
  const double split_ms = ms_since(start);
  if (parity.size() != (n + 1 - world.rank() % 2) / 2 || parity.rank() != world.rank() / 2)
    fail(fmt::format("even/odd split: rank {} of {}", parity.rank(), parity.size()));
  check_sum<int32_t>(parity, 1001, 1, "even/odd split");
  // Reversed order by key.
  tutti::Communicator reversed = world.split(0, -world.rank());
  if (reversed.rank() != n - 1 - world.rank()) fail("split by key: wrong order");
  check_sum<double>(reversed, 77, 2, "reversed split");
  tutti::Communicator single = world.split(world.rank(), 0);
  if (single.size() != 1 || single.rank() != 0) fail("singleton split");
  check_sum<float>(single, 5, 3, "singleton split");
  tutti::Communicator none = world.split(world.rank() == 0 ? -1 : 1, 0);
  if ((world.rank() == 0) != !none) fail("negative color should give a null communicator");
  if (none) check_sum<float>(none, 9, 4, "split without rank 0");
  tutti::Communicator copy = world.dup();
  if (copy.size() != n || copy.rank() != world.rank()) fail("dup");
  check_sum<int64_t>(copy, 300001, 5, "dup");
  // group with the same ranks listed in different orders (rank r lists them rotated by r): every
  // member fails at once naming the difference, and the world goes on (before, one rank went on
  // alone, the other timed out, and later calls hung).
  if (n > 1) {
    std::vector<int> rotated(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) rotated[static_cast<size_t>(i)] = (i + world.rank()) % n;
    const auto started = std::chrono::steady_clock::now();
    try {
      world.group(rotated);
      fail("group with the members in different orders did not fail");
    } catch (const tutti::Error& e) {
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (e.code() != tutti::ErrorCode::kInvalidArgument ||
          !std::strstr(e.what(), "different orders") || waited > 10)
        fail(fmt::format("group in different orders: code {} after {:.1f} s: {}",
                         static_cast<int>(e.code()), waited, e.what()));
    }
    check_sum<float>(world, 1001, 7, "the world after a refused group");
  }
  // group: the listed ranks only, in the order given; a rank not listed gets a clear error.
  std::vector<int> listed;
  for (int r = n - 1; r >= 0; r -= 2) listed.push_back(r);
  const bool member = (n - 1 - world.rank()) % 2 == 0;
  if (member) {
    tutti::Communicator g = world.group(listed);
    if (g.size() != static_cast<int>(listed.size()) || listed[g.rank()] != world.rank())
      fail("group: wrong rank order");
    check_sum<float>(g, 4097, 6, "group");
  } else {
    try {
      world.group(listed);
      fail("group called by a rank it does not list did not fail");
    } catch (const tutti::Error& e) {
      if (e.code() != tutti::ErrorCode::kInvalidArgument ||
          !std::strstr(e.what(), "not among the listed ranks"))
        fail(fmt::format("group by a non-member: unexpected error: {}", e.what()));
    }
  }
  check_sum<float>(world, 1000, 7, "world after the splits");
  ok(
      fmt::format("splits (even/odd, by key, singletons, negative color), dup and group; even/odd "
                  "split took {:.1f} ms on rank 0",
                  split_ms));
  if (world.rank() == 0) std::printf("split_ms %.2f\n", split_ms);
}

void many(tutti::Communicator& world, int count) {
  const int before = open_fds();
  std::vector<tutti::Communicator> comms;
  for (int i = 0; i < count; ++i) {
    switch (i % 3) {
      case 0:
        comms.push_back(world.dup());
        break;
      case 1:
        comms.push_back(world.split(world.rank() % 2, world.rank()));
        break;
      default:
        comms.push_back(world.split(world.rank() < world.size() / 2, -world.rank()));
        break;
    }
  }
  const int after = open_fds();
  for (int i = 0; i < count; ++i)
    check_sum<int32_t>(comms[i], 1 + 13 * i, i, fmt::format("communicator {}", i));
  const int used = after - before;
  std::printf("rank %d: %d communicators took %d file descriptors (%d open)\n", world.rank(), count,
              used, after);
  // Connections are shared: a communicator may open no descriptor of its own.
  if (used > 8) fail(fmt::format("{} communicators opened {} file descriptors", count, used));
  ok(fmt::format("{} communicators on {} ranks all work, {} more fds on rank 0", count,
                 world.size(), used));
}

// Two communicators on one store the caller made (a TcpStore started by rank 0, a FileStore in
// a directory the test gives), named and unnamed.
void stores(tutti::Communicator& world, const std::string& directory) {
  std::unique_ptr<tutti::TcpStoreServer> server;
  int32_t port = 0;
  if (world.rank() == 0) {
    server = tutti::TcpStoreServer::start("127.0.0.1", 0);
    port = server->port();
  }
  world.broadcast(std::span<int32_t>(&port, 1), 0);
  auto tcp = tutti::connect_tcp_store("127.0.0.1", static_cast<uint16_t>(port));
  for (auto store : {tcp, tutti::open_file_store(directory)}) {
    tutti::Options a = tutti::Options::from_env(), b = a;
    a.name = "first";
    b.name = "second";
    tutti::Communicator first = tutti::Communicator::create(store, world.rank(), world.size(), a);
    tutti::Communicator second = tutti::Communicator::create(store, world.rank(), world.size(), b);
    check_sum<float>(first, 10007, 1, "first communicator on " + store->describe());
    check_sum<int64_t>(second, 333, 2, "second communicator on " + store->describe());
    // Unnamed: the i-th create of each process meets the i-th of the others.
    tutti::Communicator third = tutti::Communicator::create(store, world.rank(), world.size());
    check_sum<int32_t>(third, 5, 3, "unnamed communicator on " + store->describe());
  }
  // Two processes that both think they are rank 0 under the same keys, of worlds of different
  // sizes (torch: new_group([0, 1]) on rank 0 and new_group([1]) on rank 1). The world of two must
  // fail at once naming the collision; it used to wait out TUTTI_TIMEOUT for a rank 1 that was
  // never coming. The world of one may go on (nothing it can see is wrong) or fail alike.
  if (world.rank() < 2) {
    tutti::Options o = tutti::Options::from_env();
    o.name = "collide";
    const int size = world.rank() == 0 ? 2 : 1;
    const auto started = Clock::now();
    try {
      tutti::Communicator::create(tcp, 0, size, o);
      if (size == 2) fail("two processes as rank 0 of one world: create succeeded");
    } catch (const tutti::Error& e) {
      if (e.code() != tutti::ErrorCode::kMismatch ||
          !std::strstr(e.what(), "another process joined as rank 0") || ms_since(started) > 10000)
        fail(fmt::format("two processes as rank 0: code {} after {:.0f} ms: {}",
                         static_cast<int>(e.code()), ms_since(started), e.what()));
    }
  }
  world.barrier();  // rank 0's server goes last
  ok("communicators on a caller's TcpStore and FileStore, two per store, named and unnamed; two "
     "processes as rank 0 of one store's world fail at once");
}

// abort() from a watchdog thread on rank 0 while rank 1 sleeps: every rank's call fails within
// 2 s with kAborted naming rank 0 and the reason; the world is untouched.
void abort_case(tutti::Communicator& world) {
  tutti::Communicator comm = world.dup();
  world.barrier();
  const auto start = Clock::now();
  std::thread watchdog;
  if (world.rank() == 0)
    watchdog = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      comm.abort("watchdog: step took too long");
    });
  if (world.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto call = Clock::now();
  float x = 1;
  try {
    comm.allreduce(&x, &x, 1, tutti::DataType::kFloat32, tutti::ReduceOp::kSum);
    fail("the allreduce on the aborted communicator succeeded");
  } catch (const tutti::Error& e) {
    const double waited = world.rank() == 0 ? ms_since(start) - 300 : ms_since(call);
    if (e.code() != tutti::ErrorCode::kAborted || !std::strstr(e.what(), "rank 0") ||
        !std::strstr(e.what(), "watchdog: step took too long"))
      fail(fmt::format("unexpected error: {}", e.what()));
    if (waited > 2000) fail(fmt::format("failed {:.0f} ms after the abort", waited));
    std::printf("rank %d: aborted after %.0f ms: %s\n", world.rank(), waited, e.what());
  }
  if (watchdog.joinable()) watchdog.join();
  try {
    comm.barrier();
    fail("a later call on the aborted communicator succeeded");
  } catch (const tutti::Error& e) {
    if (e.code() != tutti::ErrorCode::kAborted) fail(fmt::format("later call: {}", e.what()));
  }
  check_sum<float>(world, 100000, 9, "world after another communicator was aborted");
  ok("abort from a watchdog: every rank failed with TUTTI_ERR_ABORTED, the world went on");
}

// A per-call timeout: rank 1 arrives late; the others' call gives up after its own 300 ms.
void call_timeout(tutti::Communicator& world) {
  tutti::Communicator comm = world.dup();
  const auto start = Clock::now();
  if (world.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  float x = 1;
  try {
    tutti::CallOptions call;
    call.timeout = std::chrono::milliseconds(300);
    comm.allreduce(&x, &x, 1, tutti::DataType::kFloat32, tutti::ReduceOp::kSum, call);
    if (world.rank() != 1) fail("the call did not time out");
  } catch (const tutti::Error& e) {
    const double waited = ms_since(start);
    if (world.rank() != 1 && (e.code() != tutti::ErrorCode::kTimeout || waited > 1500))
      fail(fmt::format("after {:.0f} ms: {}", waited, e.what()));
  }
  check_sum<float>(world, 10, 1, "world after a timed-out communicator");
  ok("a per-call timeout fails the call on time and leaves other communicators working");
}

// Point-to-point: a token around the ring, 1,000 outstanding isend/irecv pairs, a size mismatch.
void p2p(tutti::Communicator& world) {
  const int n = world.size(), r = world.rank();
  if (n < 2) {
    ok("point-to-point needs two ranks");
    return;
  }
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  int64_t token = 0;
  for (int lap = 0; lap < 3; ++lap) {
    if (r == 0) {
      token += 1;
      world.send(&token, 1, tutti::DataType::kInt64, next, 5);
      world.recv(&token, 1, tutti::DataType::kInt64, prev, 5);
    } else {
      world.recv(&token, 1, tutti::DataType::kInt64, prev, 5);
      token += r + 1;
      world.send(&token, 1, tutti::DataType::kInt64, next, 5);
    }
  }
  if (r == 0 && token != 3 * static_cast<int64_t>(n) * (n + 1) / 2)
    fail(fmt::format("token came back as {}", token));
  // 1,000 messages each way with different tags and sizes, all posted before any is waited for,
  // receives in reverse order of the sends.
  constexpr int kMessages = 1000;
  std::vector<std::vector<int32_t>> out(kMessages), in(kMessages);
  std::vector<tutti::Request> requests;
  for (int k = kMessages - 1; k >= 0; --k) {
    in[k].resize(1 + (k * 37) % 3000);
    requests.push_back(world.irecv(in[k].data(), in[k].size(), tutti::DataType::kInt32, prev, k));
  }
  for (int k = 0; k < kMessages; ++k) {
    out[k].assign(1 + (k * 37) % 3000, r * 100000 + k);
    requests.push_back(world.isend(out[k].data(), out[k].size(), tutti::DataType::kInt32, next, k));
  }
  for (auto& request : requests) request.wait();
  for (int k = 0; k < kMessages; ++k)
    for (int32_t v : in[k])
      if (v != prev * 100000 + k) {
        fail(fmt::format("message {} from rank {} holds {}", k, prev, v));
        break;
      }
  // Collectives and point-to-point messages interleave without meeting.
  int32_t mark = r;
  tutti::Request pending = world.irecv(&mark, 1, tutti::DataType::kInt32, prev, 9);
  check_sum<float>(world, 1000, 2, "allreduce between a posted receive and its send");
  int32_t mine = r + 1000;
  world.send(&mine, 1, tutti::DataType::kInt32, next, 9);
  pending.wait();
  if (mark != prev + 1000) fail(fmt::format("receive posted before an allreduce got {}", mark));
  ok("point-to-point: a token around the ring, 1,000 outstanding pairs, mixed with collectives");

  // A size mismatch on a dup: both sides fail with kMismatch; the world goes on.
  tutti::Communicator comm = world.dup();
  std::vector<float> buf(100);
  try {
    if (r == 0) comm.send(buf.data(), 100, tutti::DataType::kFloat32, 1, 3);
    if (r == 1) comm.recv(buf.data(), 10, tutti::DataType::kFloat32, 0, 3);
    comm.barrier();
    if (r == 1 || r == 0) fail("size mismatch not reported");
  } catch (const tutti::Error& e) {
    if (e.code() != tutti::ErrorCode::kMismatch)
      fail(fmt::format("size mismatch: {}", e.what()));
    else if (r == 1 && !std::strstr(e.what(), "400 bytes"))
      fail(fmt::format("size mismatch message: {}", e.what()));
  }
  check_sum<float>(world, 10, 3, "world after a point-to-point mismatch");
  ok("point-to-point size mismatch: kMismatch, other communicators unaffected");
}

// The last rank ends `seconds` after the others, its communicator idle meanwhile (its stall watch
// looks into the store). Under mpirun the store lives in rank 0, which has ended by then: the late
// rank's finalize must not retry the refused store for TUTTI_TIMEOUT on each call it makes.
void late_end(tutti::Communicator& world, int seconds) {
  check_sum<float>(world, 1001, 1, "world before the ends");
  if (world.rank() != world.size() - 1) {
    ok("ended on time");
    return;
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const auto started = Clock::now();
  tutti::finalize();
  const double took = ms_since(started);
  if (took > 10'000)
    fail(fmt::format("the late rank's finalize took {:.0f} ms (the store's server had ended)",
                     took));
  else  // printed by this rank itself: ok() speaks for rank 0 alone, which has ended
    std::printf("late end: rank %d's finalize took %.0f ms after the store's server ended\n",
                g_rank, took);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  tutti::World w;
  tutti::Communicator& world = w.communicator();
  g_rank = world.rank();
  try {
    if (scenario == "threads")
      threads(world);
    else if (scenario == "splits")
      splits(world);
    else if (scenario == "many")
      many(world, argc > 2 ? std::atoi(argv[2]) : 64);
    else if (scenario == "stores")
      stores(world, argc > 2 ? argv[2] : "/tmp");
    else if (scenario == "abort")
      abort_case(world);
    else if (scenario == "timeout")
      call_timeout(world);
    else if (scenario == "p2p")
      p2p(world);
    else if (scenario == "late_end")
      late_end(world, argc > 2 ? std::atoi(argv[2]) : 3);
    else {
      std::fprintf(stderr,
                   "usage: %s threads|splits|many [N]|stores DIR|abort|timeout|p2p|late_end [S]\n",
                   argv[0]);
      return 2;
    }
  } catch (const tutti::Error& e) {
    fail(fmt::format("unexpected error: {}", e.what()));
  }
  return g_failures == 0 ? 0 : 1;
}
