// Store: the key-value space that ranks meet through before any connection exists. tutti's own
// TcpStore and FileStore implement it, and so can a caller (the PyTorch binding wraps torch's
// c10d::Store). Values are byte strings. An implementation must be safe to call from several
// threads at once (communicators created in different threads share it).
//
//   auto server = tutti::TcpStoreServer::start();                       // on one process
//   auto store = tutti::connect_tcp_store("10.0.0.1", server->port());  // on every process
//   auto comm = tutti::Communicator::create(store, rank, size);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#if defined(__GNUC__)
#define TUTTI_STORE_API __attribute__((visibility("default")))
#else
#define TUTTI_STORE_API
#endif

namespace tutti {

class TUTTI_STORE_API Store {
 public:
  virtual ~Store() = default;

  // Sets key to value, overwriting; wakes every waiter on key.
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until key exists, then returns its value; Error(kTimeout) naming the key after timeout.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Atomically adds delta to the integer at key (a missing key counts as 0); returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Whether every key exists now (never blocks for long).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Waits until every key exists; Error(kTimeout) listing the missing keys after timeout.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  // Removes key; returns whether it existed.
  virtual bool remove(const std::string& key) = 0;

  // The keys of `keys` that do not exist yet (for error messages that name who never came).
  // The default asks check() key by key.
  virtual std::vector<std::string> missing(const std::vector<std::string>& keys);
  // Where the store is, for error messages ("tcp 10.0.0.1:29500", "file /mnt/x").
  virtual std::string describe() const { return "a caller-provided store"; }
};

// Every key of `inner` seen under "<prefix>/": communicators that share one store each take a
// prefix of their own, and a caller can do the same.
class TUTTI_STORE_API PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> inner);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool remove(const std::string& key) override;
  std::vector<std::string> missing(const std::vector<std::string>& keys) override;
  std::string describe() const override;

  const std::string& prefix() const { return prefix_; }

 private:
  std::string key(const std::string& k) const { return prefix_ + "/" + k; }
  std::vector<std::string> keys(const std::vector<std::string>& ks) const;

  std::string prefix_;
  std::shared_ptr<Store> inner_;
};

// tutti's TCP store server, for callers that bring their own rendezvous (tuttirun runs one for its
// jobs). Serves until destroyed. Clients must present `job_token` (empty: none).
class TUTTI_STORE_API TcpStoreServer {
 public:
  // Listens on host:port; port 0 picks a free port; host "" means every interface.
  static std::unique_ptr<TcpStoreServer> start(const std::string& host = "127.0.0.1",
                                               uint16_t port = 0,
                                               const std::string& job_token = "");
  virtual ~TcpStoreServer() = default;
  virtual uint16_t port() const = 0;
};

// A client of a TcpStoreServer (retrying the connection until `timeout`: the server may start
// later). `host` may be a name, an IPv4 or an IPv6 address.
TUTTI_STORE_API std::shared_ptr<Store> connect_tcp_store(
    const std::string& host, uint16_t port, const std::string& job_token = "",
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A store in a directory every process can see (a shared filesystem). The directory must exist.
TUTTI_STORE_API std::shared_ptr<Store> open_file_store(const std::string& directory);

}  // namespace tutti
