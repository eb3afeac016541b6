// TcpStoreServer: one thread accepts and runs every handshake side by side (HandshakeAcceptor), so
// strangers cost neither a thread nor anyone's time; each authenticated client then gets its own
// thread, so a GET that waits for a key blocks only its own client (on a condition variable, not on
// the network). Stopping wakes the acceptor through a pipe and every client thread by shutting its
// socket down.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "bootstrap/cv_wait.hpp"
#include "bootstrap/lifeline_beat.hpp"
#include "bootstrap/store_errors.hpp"
#include "bootstrap/store_protocol.hpp"
#include "bootstrap/tcp_store.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "net/handshake.hpp"
#include "net/handshake_acceptor.hpp"

namespace tutti::bootstrap {
namespace {

namespace sp = store_protocol;

// A stranger that connects and says nothing is dropped after this long.
constexpr auto kHandshakeTimeout = std::chrono::seconds(5);
// Connections still in their handshake at once; beyond that the oldest is dropped. A rank's Hello
// is read as it is accepted, so even 1024 ranks connecting together barely use these slots.
constexpr size_t kMaxPendingHandshakes = 1024;
// How often the acceptor looks around when nothing happens (stopping wakes it at once anyway).
constexpr auto kAcceptorTick = std::chrono::seconds(60);
// A client that stops reading its responses is dropped after this long.
constexpr auto kResponseTimeout = std::chrono::seconds(60);

struct Client {
  net::Fd fd;
  std::string peer;
  net::Hello hello;
  std::thread thread;
  std::atomic<bool> done{false};
};

}  // namespace

struct TcpStoreServer::State {
  std::string token;
  net::Fd listener;
  uint16_t port = 0;
  net::Fd wake_read, wake_write;
  std::atomic<bool> stopping{false};
  std::unique_ptr<net::HandshakeAcceptor> handshakes;
  std::atomic<size_t> refused{0};  // authenticated clients dropped for protocol errors

  std::mutex data_mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> values;

  std::mutex clients_mutex;
  std::list<Client> clients;
  std::thread acceptor;

  // watch_heartbeats: set before clients come, read by the lifelines' threads.
  std::chrono::milliseconds silence{0};
  std::function<void(int64_t, int32_t, double)> on_silent;

  std::string name() const { return fmt::format("tcp server :{}", port); }
  void accept_loop();
  void reap_finished_clients();
  void serve(Client& client);
  void serve_requests(Client& client);
  void hold_lifeline(Client& client);
  void handle(Client& client, std::span<const std::byte> request, net::wire::Writer& response);
};

void TcpStoreServer::State::accept_loop() {
  while (!stopping.load()) {
    std::optional<net::AcceptedConnection> accepted;
    try {
      accepted = handshakes->next(Deadline::after(kAcceptorTick), wake_read.get());
    } catch (const Error& e) {
      // Typically EMFILE with no stranger left to drop: keep serving the clients we have; a
      // short pause avoids a hot loop.
      log::warn("store server on port {}: {}", port, e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (stopping.load()) return;
    if (!accepted) continue;
    reap_finished_clients();
    std::lock_guard lock(clients_mutex);
    Client& client = clients.emplace_back();
    client.fd = std::move(accepted->fd);
    client.peer = accepted->address;
    client.hello = std::move(accepted->hello);
    try {
      client.thread = std::thread([this, &client] { serve(client); });
    } catch (const std::system_error& e) {
      // Out of threads: drop this client (it sees a closed connection) and keep serving.
      log::warn("store server on port {}: cannot serve {}: {}", port, client.peer, e.what());
      clients.pop_back();
    }
  }
}

void TcpStoreServer::State::reap_finished_clients() {
  std::list<Client> finished;
  {
    std::lock_guard lock(clients_mutex);
    for (auto it = clients.begin(); it != clients.end();) {
      auto next = std::next(it);
      if (it->done.load()) finished.splice(finished.end(), clients, it);
      it = next;
    }
  }
  for (auto& c : finished) c.thread.join();
}

void TcpStoreServer::State::serve(Client& client) {
  try {
    if (client.hello.kind == net::ConnectionKind::kStoreLifeline) {
      hold_lifeline(client);
    } else {
      serve_requests(client);
    }
  } catch (const Error& e) {
    if (stopping.load()) {
      // Our own shutdown broke the connection; nothing to report.
    } else if (e.code() == ErrorCode::kTimeout || e.code() == ErrorCode::kMismatch) {
      ++refused;
      log::warn("store server on port {}: {}", port, e.what());
    } else {
      // Clients that simply go away (finished ranks) end up here.
      log::debug("store server on port {}: {}", port, e.what());
    }
  } catch (const std::exception& e) {
    log::warn("store server on port {}: dropped {}: {}", port, client.peer, e.what());
  }
  ::shutdown(client.fd.get(), SHUT_RDWR);
  client.done.store(true);
}

void TcpStoreServer::State::hold_lifeline(Client& client) {
  // Never written to: the client waits for this socket to close. We wait for the client to close
  // its end (the rank is gone) or for our own shutdown, and, when watching heartbeats, for a
  // beating client to fall silent.
  std::array<std::byte, 256> received{};
  // The client's hello (lifeline_beat.hpp), which may arrive in pieces.
  std::array<std::byte, lifeline_beat::kHelloBytes> hello{};
  size_t hello_bytes = 0;
  int64_t launch_id = -1;
  int32_t pid = 0;
  bool judged = false;
  auto last_beat = std::chrono::steady_clock::now();
  while (!stopping.load()) {
    int timeout_ms = -1;
    if (launch_id >= 0 && !judged && silence.count() > 0) {
      const auto quiet = std::chrono::steady_clock::now() - last_beat;
      if (quiet >= silence) {
        judged = true;  // once: the launcher acts on it (it ends the process)
        on_silent(launch_id, pid, std::chrono::duration<double>(quiet).count());
        continue;
      }
      timeout_ms =
          static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(silence - quiet).count());
    }
    pollfd p{client.fd.get(), POLLIN, 0};
    int n = ::poll(&p, 1, timeout_ms);
    if (n == 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    ssize_t got = ::recv(client.fd.get(), received.data(), received.size(), MSG_DONTWAIT);
    if (got == 0) return;
    if (got < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;
      continue;
    }
    last_beat = std::chrono::steady_clock::now();
    for (ssize_t i = 0; i < got && hello_bytes < hello.size(); ++i) {
      const std::byte b = received[static_cast<size_t>(i)];
      if (hello_bytes == 0 && b != std::byte{lifeline_beat::kHello}) {
        hello_bytes = hello.size();  // not a beating client: bytes are dropped, never judged
        break;
      }
      hello[hello_bytes++] = b;
      if (hello_bytes == hello.size()) {
        const lifeline_beat::Hello h = lifeline_beat::read_hello(hello);
        launch_id = h.launch_id;
        pid = h.pid;
      }
    }
  }
}

void TcpStoreServer::State::serve_requests(Client& client) {
  const std::string peer = "store client " + client.peer;
  while (!stopping.load()) {
    std::vector<std::byte> request = sp::receive_frame(client.fd.get(), Deadline::never(), peer);
    net::wire::Writer response = sp::begin_frame();
    try {
      handle(client, request, response);
    } catch (const Error& e) {
      response = sp::begin_frame();
      response.u8(static_cast<uint8_t>(sp::Status::kFailed));
      response.u8(static_cast<uint8_t>(e.code()));
      response.str(e.what());
    }
    if (stopping.load()) return;
    sp::send_frame(client.fd.get(), response, Deadline::after(kResponseTimeout), peer);
  }
}

void TcpStoreServer::State::handle(Client& client, std::span<const std::byte> payload,
                                   net::wire::Writer& response) {
  sp::Request request = sp::decode_request(payload, client.peer);
  auto present = [this](const std::string& k) { return values.count(k) > 0; };
  switch (request.op) {
    case sp::Op::kSet: {
      {
        std::lock_guard lock(data_mutex);
        values[request.key] = std::move(request.value);
      }
      changed.notify_all();
      response.u8(static_cast<uint8_t>(sp::Status::kOk));
      return;
    }
    case sp::Op::kGet: {
      const std::string& key = request.key;
      Deadline deadline = sp::deadline_from_ms(request.timeout_ms);
      std::unique_lock lock(data_mutex);
      bool found =
          wait_until(changed, lock, deadline, [&] { return stopping.load() || present(key); });
      if (found && present(key)) {
        response.u8(static_cast<uint8_t>(sp::Status::kOk));
        response.str(values.at(key));
      } else {
        response.u8(static_cast<uint8_t>(sp::Status::kTimeout));
      }
      return;
    }
    case sp::Op::kAdd: {
      int64_t result = 0;
      {
        std::lock_guard lock(data_mutex);
        auto it = values.find(request.key);
        result = add_to_counter(name(), request.key, it == values.end() ? nullptr : &it->second,
                                request.delta);
        values[request.key] = std::to_string(result);
      }
      changed.notify_all();
      response.u8(static_cast<uint8_t>(sp::Status::kOk));
      response.i64(result);
      return;
    }
    case sp::Op::kMissing: {
      std::vector<std::string> absent;
      {
        std::lock_guard lock(data_mutex);
        for (auto& k : request.keys)
          if (!present(k)) absent.push_back(std::move(k));
      }
      response.u8(static_cast<uint8_t>(sp::Status::kOk));
      sp::put_keys(response, absent);
      return;
    }
    case sp::Op::kWait: {
      const std::vector<std::string>& keys = request.keys;
      Deadline deadline = sp::deadline_from_ms(request.timeout_ms);
      std::unique_lock lock(data_mutex);
      auto all_present = [&] { return std::all_of(keys.begin(), keys.end(), present); };
      if (wait_until(changed, lock, deadline, [&] { return stopping.load() || all_present(); }) &&
          all_present()) {
        response.u8(static_cast<uint8_t>(sp::Status::kOk));
        return;
      }
      std::vector<std::string> absent;
      for (auto& k : keys)
        if (!present(k)) absent.push_back(k);
      response.u8(static_cast<uint8_t>(sp::Status::kTimeout));
      sp::put_keys(response, absent);
      return;
    }
    case sp::Op::kDelete: {
      bool existed = false;
      {
        std::lock_guard lock(data_mutex);
        existed = values.erase(request.key) > 0;
      }
      response.u8(static_cast<uint8_t>(sp::Status::kOk));
      response.u8(existed ? 1 : 0);
      return;
    }
  }
}

TcpStoreServer::TcpStoreServer(const std::string& host, uint16_t port, std::string job_token)
    : state_(std::make_unique<State>()) {
  state_->token = std::move(job_token);
  state_->listener = net::listen_tcp(host, port, &state_->port);
  std::array<int, 2> pipe_fds{};
  if (::pipe2(pipe_fds.data(), O_CLOEXEC | O_NONBLOCK) != 0)
    throw_system_error("pipe2() for the store server's wake-up pipe", errno);
  state_->wake_read.reset(pipe_fds[0]);
  state_->wake_write.reset(pipe_fds[1]);
  state_->handshakes = std::make_unique<net::HandshakeAcceptor>(
      state_->listener.get(),
      net::HandshakePolicy{
          .expected_token = state_->token,
          .kinds = {net::ConnectionKind::kStore, net::ConnectionKind::kStoreLifeline},
          .trailer_bytes = 0,
          .per_connection = kHandshakeTimeout,
          .max_pending = kMaxPendingHandshakes,
          .label = fmt::format("store server on port {}", state_->port)});
  state_->acceptor = std::thread([s = state_.get()] { s->accept_loop(); });
  log::debug("store server listening on port {}", state_->port);
}

TcpStoreServer::~TcpStoreServer() {
  State& s = *state_;
  {
    // Taking the data mutex orders the flag with waiters' predicate checks: none can miss it.
    std::lock_guard lock(s.data_mutex);
    s.stopping.store(true);
  }
  s.changed.notify_all();
  char byte = 1;
  (void)!::write(s.wake_write.get(), &byte, 1);
  s.acceptor.join();
  std::lock_guard lock(s.clients_mutex);
  for (auto& c : s.clients) ::shutdown(c.fd.get(), SHUT_RDWR);
  for (auto& c : s.clients) c.thread.join();
}

void TcpStoreServer::watch_heartbeats(std::chrono::milliseconds silence,
                                      std::function<void(int64_t, int32_t, double)> on_silent) {
  state_->silence = silence;
  state_->on_silent = std::move(on_silent);
}

uint16_t TcpStoreServer::port() const {
  return state_->port;
}

size_t TcpStoreServer::refused_connections() const {
  return state_->refused.load() + state_->handshakes->refused();
}

}  // namespace tutti::bootstrap
