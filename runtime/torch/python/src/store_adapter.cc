#include "store_adapter.hpp"

#include <algorithm>
#include <thread>

#include "tutti/error.hpp"

namespace tutti::torch_backend {
namespace {

// c10d stores report failures as c10::Error; tutti's callers expect tutti::Error.
template <typename F>
auto translated(const char* what, const std::string& key, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    const bool timed_out = message.find("imeout") != std::string::npos ||
                           message.find("imed out") != std::string::npos;
    throw tutti::Error(timed_out ? ErrorCode::kTimeout : ErrorCode::kSystem,
                       std::string("torch store ") + what + " '" + key + "': " + message);
  }
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

void C10dStore::set(const std::string& key, const std::string& value) {
  translated("set", key,
             [&] { store_->set(key, std::vector<uint8_t>(value.begin(), value.end())); });
}

std::string C10dStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  // c10d's get() waits with the store's own timeout; wait first so the caller's deadline holds.
  wait({key}, timeout);
  return translated("get", key, [&] {
    const std::vector<uint8_t> bytes = store_->get(key);
    return std::string(bytes.begin(), bytes.end());
  });
}

int64_t C10dStore::add(const std::string& key, int64_t delta) {
  return translated("add", key, [&] { return store_->add(key, delta); });
}

bool C10dStore::check(const std::vector<std::string>& keys) {
  return translated("check", joined(keys), [&] { return store_->check(keys); });
}

void C10dStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  // By check(), not c10d's wait(): tutti waits in short slices (it watches its peers between
  // them), and a TCPStore wait() that times out leaves the server's waiter registered on the
  // client's socket; the server's late "ready" then arrives as the first byte of the client's next
  // reply (torch before 2.1, pytorch PR 100594), which reads a wrong length and blocks for ever
  // partway through a value, which stalled ranks between pods. A check() is one request and one
  // reply, whatever the deadline (tests/integration/torch_backend/late_join_test.py).
  // Saturated: a caller's "forever" (milliseconds::max()) must not wrap into the past.
  const auto now = std::chrono::steady_clock::now();
  const auto room = std::chrono::steady_clock::time_point::max() - now;
  const auto deadline =
      timeout >= room ? std::chrono::steady_clock::time_point::max() : now + timeout;
  auto pause = std::chrono::microseconds(200);
  const std::string what = joined(keys);
  while (!translated("check", what, [&] { return store_->check(keys); })) {
    const auto at = std::chrono::steady_clock::now();
    // tutti's callers wait in slices, the last cut to what is left of their deadline (often
    // 0 ms); "within 0 ms" read as if nobody had waited at all.
    if (at >= deadline)
      throw tutti::Error(
          ErrorCode::kTimeout,
          "torch store wait '" + what + "': not set " +
              (timeout.count() > 0 ? "within " + std::to_string(timeout.count()) + " ms"
                                   : std::string("when the caller's deadline passed")));
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - at));
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
}

bool C10dStore::remove(const std::string& key) {
  return translated("remove", key, [&] { return store_->deleteKey(key); });
}

}  // namespace tutti::torch_backend
