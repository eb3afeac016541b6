#include "bootstrap/etcd_client.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "bootstrap/curl_library.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::bootstrap {
namespace {

using nlohmann::json;

constexpr uint16_t kDefaultEtcdPort = 2379;

struct HandleCloser {
  void operator()(CURL* handle) const { curl().easy_cleanup(handle); }
};
using CurlHandle = std::unique_ptr<CURL, HandleCloser>;

struct HeaderListCloser {
  void operator()(curl_slist* list) const { curl().slist_free_all(list); }
};
using HeaderList = std::unique_ptr<curl_slist, HeaderListCloser>;

std::string endpoint_url(const net::Endpoint& e) {
  const bool v6 = e.host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}", v6 ? "[" : "", e.host, v6 ? "]" : "", e.port);
}

// A failure of the connection rather than an answer: worth another endpoint or another try.
bool connection_failure(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return true;
    default:
      return false;
  }
}

size_t append_to_string(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// A watch's stream: results one per line, handed on as they complete.
struct WatchStream {
  std::string pending;
  const std::function<bool(const json&)>* on_result = nullptr;
  bool matched = false;
  std::string refusal;
  std::exception_ptr error;

  // Returns false to stop the transfer.
  bool take(std::string_view data) {
    pending.append(data);
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      json message = json::parse(line);
      if (failed(message)) {
        refusal = failure_message(message);
        return false;
      }
      if (message.contains("result") && (*on_result)(message["result"])) {
        matched = true;
        return false;
      }
    }
    return true;
  }
};

size_t feed_watch(char* data, size_t size, size_t count, void* user) {
  auto* stream = static_cast<WatchStream*>(user);
  try {
    return stream->take(std::string_view(data, size * count)) ? size * count : 0;
  } catch (...) {
    // Nothing may unwind through libcurl's C frames.
    stream->error = std::current_exception();
    return 0;
  }
}

}  // namespace

EtcdAddress parse_etcd_address(const std::string& text, const std::string& what) {
  for (const char* tls : {"etcds://", "etcd+https://", "https://"})
    if (text.starts_with(tls))
      throw make_error(ErrorCode::kConfig,
                       "{}='{}': etcd over TLS is not supported; give etcd a plain-http client "
                       "URL on the job's network (etcd --listen-client-urls http://...) and write "
                       "etcd://host:port",
                       what, text);
  constexpr std::string_view kScheme = "etcd://";
  if (!text.starts_with(kScheme))
    throw make_error(ErrorCode::kConfig, "{}='{}' is not an etcd address: write etcd://host:port",
                     what, text);
  std::string rest = text.substr(kScheme.size());
  EtcdAddress address;
  const size_t slash = rest.find('/');
  std::string hosts = rest.substr(0, slash);
  address.prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!address.prefix.empty() && address.prefix.back() == '/') address.prefix.pop_back();
  if (address.prefix.empty()) address.prefix = "/tutti";
  size_t start = 0;
  while (start <= hosts.size()) {
    size_t comma = hosts.find(',', start);
    if (comma == std::string::npos) comma = hosts.size();
    std::string host = hosts.substr(start, comma - start);
    start = comma + 1;
    if (host.empty())
      throw make_error(ErrorCode::kConfig,
                       "{}='{}' has an empty endpoint: write etcd://host:port[,host:port][/prefix]",
                       what, text);
    const size_t close = host.rfind(']');
    const size_t colon = host.rfind(':');
    const bool has_port = colon != std::string::npos &&
                          (close == std::string::npos || colon > close) &&
                          (host.front() == '[' || host.find(':') == colon);
    if (!has_port) host += fmt::format(":{}", kDefaultEtcdPort);
    net::Endpoint endpoint = net::parse_endpoint(host, what);
    if (endpoint.port == 0)
      throw make_error(ErrorCode::kConfig, "{}='{}' names port 0", what, text);
    address.endpoints.push_back(endpoint);
  }
  return address;
}

std::string etcd_url(const EtcdAddress& address) {
  std::string hosts;
  for (const auto& e : address.endpoints) hosts += (hosts.empty() ? "" : ",") + e.to_string();
  return "etcd://" + hosts + address.prefix;
}

struct EtcdClient::State {
  std::vector<std::string> urls;
  std::atomic<size_t> preferred{0};
  std::mutex idle_mutex;
  std::vector<CurlHandle> idle;
  HeaderList headers;

  CurlHandle acquire() {
    {
      std::lock_guard lock(idle_mutex);
      if (!idle.empty()) {
        CurlHandle handle = std::move(idle.back());
        idle.pop_back();
        return handle;
      }
    }
    CurlHandle handle(curl().easy_init());
    if (!handle) throw make_error(ErrorCode::kSystem, "curl_easy_init failed (out of memory?)");
    return handle;
  }

  // Kept for the next call: its connection stays open (keep-alive).
  void release(CurlHandle handle) {
    std::lock_guard lock(idle_mutex);
    if (idle.size() < 8) idle.push_back(std::move(handle));
  }

  // One POST of `payload` to urls[index] + path, the body going to `write` with `user`.
  CURLcode perform(CURL* handle, size_t index, const std::string& path, const std::string& payload,
                   Deadline deadline, curl_write_callback write, void* user, char* error_buffer) {
    const auto& lib = curl();
    const long budget_ms = std::max(1, deadline.remaining_ms(24 * 3600 * 1000));
    const std::string url = urls[index] + path;
    lib.easy_setopt(handle, CURLOPT_URL, url.c_str());
    lib.easy_setopt(handle, CURLOPT_POST, 1L);
    lib.easy_setopt(handle, CURLOPT_POSTFIELDS, payload.data());
    lib.easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
    lib.easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
    lib.easy_setopt(handle, CURLOPT_WRITEFUNCTION, write);
    lib.easy_setopt(handle, CURLOPT_WRITEDATA, user);
    lib.easy_setopt(handle, CURLOPT_TIMEOUT_MS, budget_ms);
    lib.easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, budget_ms);
    // Signals would reach other threads' handlers; timeouts without them need NOSIGNAL.
    lib.easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    lib.easy_setopt(handle, CURLOPT_TCP_NODELAY, 1L);
    // etcd is on the job's network: an http_proxy meant for the internet must not carry it.
    lib.easy_setopt(handle, CURLOPT_PROXY, "");
    lib.easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);
    error_buffer[0] = '\0';
    return lib.easy_perform(handle);
  }

  std::string failure_text(CURLcode rc, const char* error_buffer) const {
    return error_buffer[0] != '\0' ? std::string(error_buffer) : curl().easy_strerror(rc);
  }
};

EtcdClient::EtcdClient(std::vector<net::Endpoint> endpoints) : state_(std::make_unique<State>()) {
  for (const auto& e : endpoints) state_->urls.push_back(endpoint_url(e));
  if (state_->urls.empty())
    throw make_error(ErrorCode::kInvalidArgument, "an etcd client needs at least one endpoint");
  const auto& lib = curl();
  curl_slist* list = lib.slist_append(nullptr, "Content-Type: application/json");
  // No "Expect: 100-continue" round trip before large bodies.
  if (list != nullptr) list = lib.slist_append(list, "Expect:");
  if (list == nullptr) throw make_error(ErrorCode::kSystem, "curl_slist_append failed");
  state_->headers.reset(list);
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::describe() const {
  std::string out;
  for (const auto& url : state_->urls) out += (out.empty() ? "" : ",") + url;
  return out;
}

json EtcdClient::post(const std::string& path, const json& body, Deadline deadline,
                      const std::atomic<bool>* cancelled) {
  const std::string payload = body.dump();
  std::string last_failure;
  auto backoff = std::chrono::milliseconds(10);
  for (;;) {
    const size_t index = state_->preferred.load() % state_->urls.size();
    CurlHandle handle = state_->acquire();
    std::string response;
    char error_buffer[CURL_ERROR_SIZE];
    CURLcode rc = state_->perform(handle.get(), index, path, payload, deadline, append_to_string,
                                  &response, error_buffer);
    if (rc == CURLE_OK) {
      long status = 0;
      curl().easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status);
      state_->release(std::move(handle));
      json reply = json::parse(response, nullptr, /*allow_exceptions=*/false);
      if (reply.is_discarded() || !reply.is_object())
        throw make_error(ErrorCode::kConfig,
                         "{}{} answered HTTP {} with '{}', not etcd's JSON: is this etcd's client "
                         "URL (etcd 3.4 or later, whose v3 API has the /v3/ gateway)?",
                         state_->urls[index], path, status, response.substr(0, 200));
      return reply;
    }
    last_failure =
        fmt::format("{}: {}", state_->urls[index], state_->failure_text(rc, error_buffer));
    if (!connection_failure(rc))
      throw make_error(ErrorCode::kSystem, "etcd request {} failed: {}", path, last_failure);
    state_->preferred.store(index + 1);
    if (deadline.expired())
      throw make_error(ErrorCode::kTimeout,
                       "etcd at {} did not answer {} in time (last: {}); check that etcd runs and "
                       "that TUTTI_STORE names its client URL",
                       describe(), path, last_failure);
    if (cancelled != nullptr && cancelled->load())
      throw make_error(ErrorCode::kAborted, "etcd request {} given up: its caller stops ({})", path,
                       last_failure);
    log::debug("etcd {}: {}; retrying", path, last_failure);
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

bool EtcdClient::watch(const json& create_request, Deadline deadline,
                       const std::function<bool(const json&)>& on_result) {
  const std::string payload = json{{"create_request", create_request}}.dump();
  const size_t index = state_->preferred.load() % state_->urls.size();
  CurlHandle handle = state_->acquire();
  WatchStream stream;
  stream.on_result = &on_result;
  char error_buffer[CURL_ERROR_SIZE];
  CURLcode rc = state_->perform(handle.get(), index, "/v3/watch", payload, deadline, feed_watch,
                                &stream, error_buffer);
  // A stopped transfer's connection is closed by libcurl; the handle itself is fine to reuse.
  state_->release(std::move(handle));
  if (stream.error) std::rethrow_exception(stream.error);
  if (stream.matched) return true;
  if (!stream.refusal.empty())
    throw make_error(ErrorCode::kSystem, "etcd at {} refused a watch: {}", state_->urls[index],
                     stream.refusal);
  if (rc != CURLE_OK && rc != CURLE_OPERATION_TIMEDOUT && connection_failure(rc)) {
    // The caller looks again and reopens; give a failing endpoint a moment, and the next one a
    // turn.
    state_->preferred.store(index + 1);
    log::debug("etcd watch at {}: {}", state_->urls[index], state_->failure_text(rc, error_buffer));
    std::this_thread::sleep_for(
        std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(50), deadline.remaining()));
  } else if (rc == CURLE_OK) {
    // The stream ended without the event (something between us and etcd closed it): the caller
    // looks again, but not in a hot loop.
    std::this_thread::sleep_for(
        std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(50), deadline.remaining()));
  } else if (rc != CURLE_OPERATION_TIMEDOUT) {
    throw make_error(ErrorCode::kSystem, "etcd watch at {} failed: {}", state_->urls[index],
                     state_->failure_text(rc, error_buffer));
  }
  return false;
}

bool failed(const json& reply) {
  return reply.is_object() && reply.contains("error");
}

std::string failure_message(const json& reply) {
  if (!reply.contains("error")) return "";
  const json& e = reply["error"];
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object() && e.contains("message") && e["message"].is_string())
    return e["message"].get<std::string>();
  return e.dump();
}

int64_t json_int(const json& object, const char* field, int64_t fallback) {
  if (!object.is_object() || !object.contains(field)) return fallback;
  const json& v = object[field];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    try {
      size_t used = 0;
      long long parsed = std::stoll(s, &used);
      if (used == s.size()) return parsed;
    } catch (const std::exception&) {
    }
  }
  throw make_error(ErrorCode::kSystem, "etcd's reply has '{}': {} where an integer belongs", field,
                   v.dump());
}

}  // namespace tutti::bootstrap
