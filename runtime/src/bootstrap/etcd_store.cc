#include "bootstrap/etcd_store.hpp"

#include <optional>
#include <thread>

#include "bootstrap/store_errors.hpp"
#include "core/base64.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::bootstrap {
namespace {

using nlohmann::json;

// etcd's default --max-txn-ops is 128.
constexpr size_t kRangesPerTxn = 100;

std::string decode(const json& kv, const char* field) {
  if (!kv.contains(field)) return "";  // the gateway leaves out empty fields
  std::optional<std::string> bytes = base64_decode(kv[field].get<std::string>());
  if (!bytes)
    throw make_error(ErrorCode::kSystem, "etcd's reply has a {} that is not base64: {}", field,
                     kv[field].dump().substr(0, 100));
  return *bytes;
}

// The kv a range reply holds, if any.
const json* first_kv(const json& reply) {
  if (!reply.contains("kvs") || !reply["kvs"].is_array() || reply["kvs"].empty()) return nullptr;
  return &reply["kvs"][0];
}

}  // namespace

EtcdStore::EtcdStore(const EtcdAddress& address, std::chrono::seconds lease_ttl,
                     std::chrono::milliseconds request_timeout, Deadline connect_deadline)
    : client_(std::make_shared<EtcdClient>(address.endpoints)),
      prefix_(address.prefix),
      request_timeout_(request_timeout) {
  if (lease_ttl.count() > 0) {
    lease_ = std::make_unique<EtcdLease>(client_, lease_ttl, connect_deadline);
  } else {
    // Still reach etcd now, so a wrong address fails here and not at the first key.
    checked("reach", "",
            client_->post("/v3/kv/range", json{{"key", base64_encode(prefix_)}}, connect_deadline));
  }
}

EtcdStore::~EtcdStore() = default;

std::string EtcdStore::full_key(const std::string& key) const {
  return prefix_ + "/" + key;
}

Deadline EtcdStore::request_deadline() const {
  return Deadline::after(request_timeout_);
}

int64_t EtcdStore::lease_id() const {
  return lease_ ? lease_->id() : 0;
}

std::chrono::seconds EtcdStore::lease_ttl() const {
  return lease_ ? lease_->ttl() : std::chrono::seconds(0);
}

json EtcdStore::checked(const char* what, const std::string& key, json reply) const {
  if (!failed(reply)) return reply;
  const std::string message = failure_message(reply);
  if (message.find("too large") != std::string::npos ||
      message.find("larger than max") != std::string::npos)
    throw make_error(ErrorCode::kConfig,
                     "etcd at {} refused to {} key '{}': {}; raise etcd's --max-request-bytes "
                     "(1.5 MiB by default)",
                     client_->describe(), what, key, message);
  throw make_error(ErrorCode::kSystem, "etcd at {} refused to {} key '{}': {}", client_->describe(),
                   what, key, message);
}

void EtcdStore::set(const std::string& key, const std::string& value) {
  json body{{"key", base64_encode(full_key(key))}, {"value", base64_encode(value)}};
  if (const int64_t lease = lease_id(); lease != 0) body["lease"] = std::to_string(lease);
  checked("set", key, client_->post("/v3/kv/put", body, request_deadline()));
}

std::string EtcdStore::get(const std::string& key, Deadline deadline) {
  const std::string encoded = base64_encode(full_key(key));
  for (;;) {
    // One look even past the deadline: a key that is there is returned.
    const Deadline look = deadline.remaining() > request_timeout_ ? deadline : request_deadline();
    json reply = checked("read", key, client_->post("/v3/kv/range", json{{"key", encoded}}, look));
    if (const json* kv = first_kv(reply)) return decode(*kv, "value");
    if (deadline.expired()) throw get_timeout_error(describe(), key);
    // Watch from the revision after the one that did not have it: no write in between is missed.
    const int64_t revision = json_int(reply.value("header", json::object()), "revision");
    std::string value;
    const bool found =
        client_->watch(json{{"key", encoded}, {"start_revision", std::to_string(revision + 1)}},
                       deadline, [&](const json& result) {
                         if (result.value("canceled", false)) return true;  // compacted: look again
                         if (!result.contains("events")) return false;
                         for (const json& event : result["events"]) {
                           if (event.value("type", "PUT") != "PUT") continue;
                           value = decode(event["kv"], "value");
                           return true;
                         }
                         return false;
                       });
    if (found && !value.empty()) return value;
    // A put of "" is indistinguishable from a cancel here; the range above settles either.
  }
}

int64_t EtcdStore::add(const std::string& key, int64_t delta) {
  const std::string encoded = base64_encode(full_key(key));
  json current = checked("read", key,
                         client_->post("/v3/kv/range", json{{"key", encoded}}, request_deadline()));
  for (int attempt = 0;; ++attempt) {
    const json* kv = first_kv(current);
    std::string old_value;
    if (kv != nullptr) old_value = decode(*kv, "value");
    const int64_t result =
        add_to_counter(describe(), key, kv != nullptr ? &old_value : nullptr, delta);
    json put{{"key", encoded}, {"value", base64_encode(std::to_string(result))}};
    json compare;
    if (kv == nullptr) {
      // A new counter belongs to this process's lease; an existing one keeps its creator's.
      if (const int64_t lease = lease_id(); lease != 0) put["lease"] = std::to_string(lease);
      compare = {
          {"key", encoded}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}};
    } else {
      if (json_int(*kv, "lease") != 0) put["ignore_lease"] = true;
      compare = {{"key", encoded},
                 {"target", "MOD"},
                 {"result", "EQUAL"},
                 {"mod_revision", std::to_string(json_int(*kv, "mod_revision"))}};
    }
    json txn{{"compare", json::array({compare})},
             {"success", json::array({json{{"request_put", put}}})},
             {"failure", json::array({json{{"request_range", json{{"key", encoded}}}}})}};
    json reply = checked("add to", key, client_->post("/v3/kv/txn", txn, request_deadline()));
    if (reply.value("succeeded", false)) return result;
    // Another writer came first: its value is in the failure branch's range.
    const json& responses = reply["responses"];
    if (!responses.is_array() || responses.empty() || !responses[0].contains("response_range"))
      throw make_error(ErrorCode::kSystem, "etcd at {}: a failed add to '{}' returned {}",
                       client_->describe(), key, reply.dump().substr(0, 200));
    current = responses[0]["response_range"];
    if (attempt > 10000)
      throw make_error(ErrorCode::kTimeout, "etcd at {}: add to '{}' lost 10000 races in a row",
                       client_->describe(), key);
  }
}

std::vector<std::string> EtcdStore::missing(const std::vector<std::string>& keys) {
  std::vector<std::string> absent;
  for (size_t start = 0; start < keys.size(); start += kRangesPerTxn) {
    const size_t end = std::min(keys.size(), start + kRangesPerTxn);
    json ranges = json::array();
    for (size_t i = start; i < end; ++i)
      ranges.push_back(json{{"request_range", json{{"key", base64_encode(full_key(keys[i]))},
                                                   {"count_only", true}}}});
    json reply =
        checked("read", keys[start],
                client_->post("/v3/kv/txn", json{{"success", ranges}}, request_deadline()));
    const json& responses = reply["responses"];
    for (size_t i = start; i < end; ++i) {
      const json& range = responses.at(i - start).value("response_range", json::object());
      if (json_int(range, "count") == 0) absent.push_back(keys[i]);
    }
  }
  return absent;
}

void EtcdStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  for (const std::string& key : missing(keys)) {
    try {
      get(key, deadline);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout) throw;
      throw wait_timeout_error(describe(), missing(keys));
    }
  }
}

bool EtcdStore::remove(const std::string& key) {
  json reply =
      checked("remove", key,
              client_->post("/v3/kv/deleterange", json{{"key", base64_encode(full_key(key))}},
                            request_deadline()));
  return json_int(reply, "deleted") > 0;
}

EtcdStore::Claim EtcdStore::claim(const std::string& key, Deadline deadline,
                                  const std::string& waiting) {
  const std::chrono::seconds ttl = lease_ttl();
  const Deadline expiry = Deadline::after(ttl + std::chrono::seconds(2));
  bool waited = false;
  while (add(key, 1) != 1) {
    if (ttl.count() == 0 || expiry.expired() || deadline.expired()) return Claim::kHeld;
    if (!waited)
      log::warn("{}: waiting up to {} s for them to expire in {}", waiting, ttl.count() + 2,
                describe());
    waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return waited ? Claim::kAfterExpiry : Claim::kFree;
}

int64_t EtcdStore::clear(const std::string& keep) {
  return clear(keep, request_deadline());
}

int64_t EtcdStore::clear(const std::string& keep, Deadline deadline) {
  // Every key that starts with "<prefix>/": the range up to "<prefix>0" ('0' follows '/'); with a
  // key to keep, the ranges below it and above it (its successor is the key and a NUL byte).
  const auto delete_range = [&](const std::string& from, const std::string& to) {
    json reply =
        checked("clear", prefix_ + "/",
                client_->post("/v3/kv/deleterange",
                              json{{"key", base64_encode(from)}, {"range_end", base64_encode(to)}},
                              deadline));
    return json_int(reply, "deleted");
  };
  if (keep.empty()) return delete_range(prefix_ + "/", prefix_ + "0");
  const std::string kept = prefix_ + "/" + keep;
  return delete_range(prefix_ + "/", kept) +
         delete_range(kept + std::string(1, '\0'), prefix_ + "0");
}

std::string EtcdStore::describe() const {
  return fmt::format("etcd {} under {}", client_->describe(), prefix_);
}

}  // namespace tutti::bootstrap
