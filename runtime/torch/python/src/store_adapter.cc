#include "store_adapter.hpp"

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
  translated("wait", joined(keys), [&] { store_->wait(keys, timeout); });
}

bool C10dStore::remove(const std::string& key) {
  return translated("remove", key, [&] { return store_->deleteKey(key); });
}

}  // namespace tutti::torch_backend
