#include "bootstrap/etcd_lease.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::bootstrap {
namespace {

using nlohmann::json;

int64_t grant(EtcdClient& client, std::chrono::seconds ttl, Deadline deadline) {
  json reply = client.post("/v3/lease/grant", json{{"TTL", std::to_string(ttl.count())}}, deadline);
  if (failed(reply))
    throw make_error(ErrorCode::kSystem, "etcd at {} refused a lease of {} s: {}",
                     client.describe(), ttl.count(), failure_message(reply));
  const int64_t id = json_int(reply, "ID");
  if (id == 0)
    throw make_error(ErrorCode::kSystem, "etcd at {} granted no lease: {}", client.describe(),
                     reply.dump());
  return id;
}

}  // namespace

struct EtcdLease::State {
  std::shared_ptr<EtcdClient> client;
  std::chrono::seconds ttl;
  std::atomic<int64_t> id{0};
  std::mutex mutex;
  std::condition_variable stop_requested;
  bool stopping = false;
  std::atomic<bool> cancelled{false};  // stopping, for the retries of a keep-alive under way
  std::thread keeper;

  // One keep-alive; returns whether etcd still has the lease (unreachable counts as kept: the
  // next try may reach it before the TTL runs out).
  bool keep_alive(const std::string& id_text, bool& warned) {
    json reply;
    try {
      reply = client->post("/v3/lease/keepalive", json{{"ID", id_text}},
                           Deadline::after(ttl / 3 + std::chrono::seconds(1)), &cancelled);
    } catch (const Error& e) {
      if (cancelled.load()) return true;  // stopping: nothing to keep any more
      if (!warned)
        log::warn("etcd lease {}: keep-alive failed ({}); retrying until its TTL of {} s runs out",
                  id_text, e.what(), ttl.count());
      warned = true;
      return true;
    }
    warned = false;
    const json& result = reply.contains("result") ? reply["result"] : reply;
    return !failed(reply) && json_int(result, "TTL") > 0;
  }

  void run() {
    bool warned = false;
    std::unique_lock lock(mutex);
    while (!stop_requested.wait_for(lock, ttl / 3, [&] { return stopping; })) {
      lock.unlock();
      const int64_t current = id.load();
      if (!keep_alive(std::to_string(current), warned)) {
        log::error(
            "etcd lease {} expired: the keys this process wrote in {} are gone (it could "
            "not reach etcd for {} s, or stalled that long); peers still waiting for them "
            "will time out. Raise TUTTI_ETCD_LEASE_TTL if such pauses are expected",
            current, client->describe(), ttl.count());
        try {
          id.store(grant(*client, ttl, Deadline::after(ttl)));
        } catch (const Error& e) {
          log::error("etcd lease: no new lease: {}", e.what());
        }
      }
      lock.lock();
    }
  }
};

EtcdLease::EtcdLease(std::shared_ptr<EtcdClient> client, std::chrono::seconds ttl,
                     Deadline deadline)
    : state_(std::make_shared<State>()) {
  if (ttl.count() < 3)
    throw make_error(ErrorCode::kConfig,
                     "an etcd lease of {} s is too short to keep alive; use 3 s or more",
                     ttl.count());
  state_->client = std::move(client);
  state_->ttl = ttl;
  state_->id = grant(*state_->client, ttl, deadline);
  state_->keeper = std::thread([state = state_] { state->run(); });
}

EtcdLease::~EtcdLease() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    state_->cancelled.store(true);
  }
  state_->stop_requested.notify_all();
  state_->keeper.join();
}

int64_t EtcdLease::id() const {
  return state_->id.load();
}
std::chrono::seconds EtcdLease::ttl() const {
  return state_->ttl;
}

}  // namespace tutti::bootstrap
