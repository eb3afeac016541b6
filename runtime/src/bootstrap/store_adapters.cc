// The public store API (tutti/store.hpp): PrefixStore, the TCP store server and client, the file
// store, and the adapters between public and internal stores.
#include "bootstrap/store_adapters.hpp"

#include <algorithm>

#include "bootstrap/file_store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "core/error.hpp"

namespace tutti {

std::vector<std::string> Store::missing(const std::vector<std::string>& keys) {
  std::vector<std::string> absent;
  for (const auto& key : keys)
    if (!check({key})) absent.push_back(key);
  return absent;
}

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> inner)
    : prefix_(std::move(prefix)), inner_(std::move(inner)) {
  if (!inner_) throw make_error(ErrorCode::kInvalidArgument, "PrefixStore needs a store");
}

std::vector<std::string> PrefixStore::keys(const std::vector<std::string>& ks) const {
  std::vector<std::string> out;
  out.reserve(ks.size());
  for (const auto& k : ks) out.push_back(key(k));
  return out;
}

void PrefixStore::set(const std::string& k, const std::string& value) {
  inner_->set(key(k), value);
}
std::string PrefixStore::get(const std::string& k, std::chrono::milliseconds timeout) {
  return inner_->get(key(k), timeout);
}
int64_t PrefixStore::add(const std::string& k, int64_t delta) {
  return inner_->add(key(k), delta);
}
bool PrefixStore::check(const std::vector<std::string>& ks) {
  return inner_->check(keys(ks));
}
void PrefixStore::wait(const std::vector<std::string>& ks, std::chrono::milliseconds timeout) {
  inner_->wait(keys(ks), timeout);
}
bool PrefixStore::remove(const std::string& k) {
  return inner_->remove(key(k));
}
std::vector<std::string> PrefixStore::missing(const std::vector<std::string>& ks) {
  std::vector<std::string> absent = inner_->missing(keys(ks));
  for (auto& k : absent) k.erase(0, prefix_.size() + 1);
  return absent;
}
std::string PrefixStore::describe() const {
  return fmt::format("{} (prefix {})", inner_->describe(), prefix_);
}

namespace {

using Milliseconds = std::chrono::milliseconds;

Milliseconds remaining_ms(Deadline deadline) {
  return std::chrono::duration_cast<Milliseconds>(deadline.remaining());
}

class UserStore final : public bootstrap::Store {
 public:
  explicit UserStore(std::shared_ptr<tutti::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::string& value) override { store_->set(key, value); }
  std::string get(const std::string& key, Deadline deadline) override {
    return store_->get(key, remaining_ms(deadline));
  }
  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }
  std::vector<std::string> missing(const std::vector<std::string>& keys) override {
    return store_->missing(keys);
  }
  void wait(const std::vector<std::string>& keys, Deadline deadline) override {
    store_->wait(keys, remaining_ms(deadline));
  }
  bool remove(const std::string& key) override { return store_->remove(key); }
  std::string describe() const override { return store_->describe(); }

 private:
  std::shared_ptr<tutti::Store> store_;
};

class ExposedStore final : public tutti::Store {
 public:
  explicit ExposedStore(std::unique_ptr<bootstrap::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mutex_);
    store_->set(key, value);
  }
  std::string get(const std::string& key, Milliseconds timeout) override {
    std::lock_guard lock(mutex_);
    return store_->get(key, Deadline::after(timeout));
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard lock(mutex_);
    return store_->add(key, delta);
  }
  bool check(const std::vector<std::string>& keys) override { return missing(keys).empty(); }
  std::vector<std::string> missing(const std::vector<std::string>& keys) override {
    std::lock_guard lock(mutex_);
    return store_->missing(keys);
  }
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override {
    std::lock_guard lock(mutex_);
    store_->wait(keys, Deadline::after(timeout));
  }
  bool remove(const std::string& key) override {
    std::lock_guard lock(mutex_);
    return store_->remove(key);
  }
  std::string describe() const override { return store_->describe(); }

 private:
  std::mutex mutex_;  // one request at a time on a TcpStore connection
  std::unique_ptr<bootstrap::Store> store_;
};

class ServerHandle final : public TcpStoreServer {
 public:
  ServerHandle(const std::string& host, uint16_t port, const std::string& token)
      : server_(host, port, token) {}
  uint16_t port() const override { return server_.port(); }

 private:
  bootstrap::TcpStoreServer server_;
};

}  // namespace

std::unique_ptr<TcpStoreServer> TcpStoreServer::start(const std::string& host, uint16_t port,
                                                      const std::string& job_token) {
  return std::make_unique<ServerHandle>(host, port, job_token);
}

std::shared_ptr<Store> connect_tcp_store(const std::string& host, uint16_t port,
                                         const std::string& job_token, Milliseconds timeout) {
  if (port == 0) throw make_error(ErrorCode::kInvalidArgument, "connect_tcp_store: port 0");
  net::Endpoint endpoint{host, port};
  return std::make_shared<ExposedStore>(
      std::make_unique<bootstrap::TcpStore>(endpoint, job_token, -1, Deadline::after(timeout)));
}

std::shared_ptr<Store> open_file_store(const std::string& directory) {
  return std::make_shared<ExposedStore>(std::make_unique<bootstrap::FileStore>(directory));
}

namespace bootstrap {

std::unique_ptr<Store> adopt_user_store(std::shared_ptr<tutti::Store> store) {
  if (!store) throw make_error(ErrorCode::kInvalidArgument, "no store given (null)");
  return std::make_unique<UserStore>(std::move(store));
}

std::shared_ptr<tutti::Store> expose_store(std::unique_ptr<Store> store) {
  return std::make_shared<ExposedStore>(std::move(store));
}

}  // namespace bootstrap
}  // namespace tutti
