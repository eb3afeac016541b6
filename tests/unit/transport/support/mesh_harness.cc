#include "unit/transport/support/mesh_harness.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

namespace tutti::transport::test_support {

std::string_view to_string(Layout layout) {
  switch (layout) {
    case Layout::kTcp:
      return "tcp";
    case Layout::kShm:
      return "shm";
    case Layout::kMixed:
      return "mixed";
  }
  return "?";
}

std::vector<std::string> host_ids(Layout layout, int size) {
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) {
    switch (layout) {
      case Layout::kTcp:
        hosts.push_back(fmt::format("host-{}", r));
        break;
      case Layout::kShm:
        hosts.push_back("host");
        break;
      case Layout::kMixed:
        hosts.push_back(fmt::format("host-{}", r / 2));
        break;
    }
  }
  return hosts;
}

std::string unique_job_id(std::string_view label) {
  static std::atomic<int> counter{0};
  return fmt::format("test-{}-{}-{}", label, getpid(), counter++);
}

MeshConfig mesh_config(int rank, int size, Layout layout, const std::string& job_id) {
  MeshConfig c;
  c.rank = rank;
  c.size = size;
  c.host_ids = host_ids(layout, size);
  c.job_id = job_id;
  c.job_token = "secret-token";
  c.listen_address = "127.0.0.1";
  c.options.transport = TransportKind::kAuto;
  c.options.shm_ring_bytes = 64 << 10;  // small, so big messages wrap the ring many times
  // The smallest window: these tests only need it built (and unlinked), not fast.
  c.options.shm_window_bytes = 64 << 10;
  return c;
}

std::vector<std::exception_ptr> run_ranks(int size, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

void run_ranks_or_throw(int size, const std::function<void(int)>& fn) {
  for (auto& e : run_ranks(size, fn))
    if (e) std::rethrow_exception(e);
}

std::vector<std::string> leftover_segments(const std::string& job_id) {
  std::vector<std::string> found;
  std::string prefix = "tutti-" + job_id + "-";
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) found.push_back(name);
  }
  return found;
}

std::vector<std::byte> pattern(int from, int to, size_t size, int salt) {
  std::vector<std::byte> bytes(size);
  uint64_t x =
      static_cast<uint64_t>(from * 7919 + to * 104729 + salt * 13 + 1) * 0x9e3779b97f4a7c15ull +
      size;
  for (size_t i = 0; i < size; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t word = x ^ (x >> 29);
    std::memcpy(bytes.data() + i, &word, std::min<size_t>(8, size - i));
  }
  return bytes;
}

std::string error_mismatch(const std::exception_ptr& error, ErrorCode code,
                           std::string_view needle) {
  if (!error) return "nothing was thrown";
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    if (e.code() != code)
      return fmt::format("error code {} instead of {}: {}", static_cast<int>(e.code()),
                         static_cast<int>(code), e.what());
    if (std::string_view(e.what()).find(needle) == std::string_view::npos)
      return fmt::format("the message lacks '{}': {}", needle, e.what());
    return "";
  } catch (const std::exception& e) {
    return fmt::format("not a tutti::Error: {}", e.what());
  }
}

}  // namespace tutti::transport::test_support
