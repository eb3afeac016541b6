// TcpStore client. Calls are thread-safe: each call borrows an idle authenticated connection (or
// opens one), so a get() blocked waiting for a key never holds up another thread's set().
#include "bootstrap/tcp_store.hpp"

#include <atomic>
#include <mutex>
#include <vector>

#include "bootstrap/store_errors.hpp"
#include "bootstrap/store_protocol.hpp"
#include "core/error.hpp"
#include "net/handshake.hpp"

namespace tutti::bootstrap {
namespace {

namespace sp = store_protocol;

// The server answers a waiting GET at the deadline it was given; this much extra time covers the
// round trip before the client gives up on the socket itself.
constexpr auto kReplyGrace = std::chrono::seconds(5);

Deadline with_grace(Deadline deadline) {
  if (deadline.at() == Deadline::Clock::time_point::max()) return deadline;
  return Deadline::after(deadline.remaining() + kReplyGrace);
}

}  // namespace

struct TcpStore::State {
  net::Endpoint server;
  std::string token;
  int rank = -1;
  std::chrono::milliseconds request_timeout{60'000};  // for calls without a deadline of their own
  std::string peer;                                   // "store at host:port", for messages
  std::string local_address;
  std::mutex mutex;
  std::vector<net::Fd> idle;
  // Set once the server has answered: from then on a refused connection means it has ended (the
  // rank hosting it is gone), and the call fails at once instead of retrying to its deadline.
  std::atomic<bool> reached{false};

  net::Fd open_connection(Deadline deadline) {
    net::Fd fd =
        net::connect_tcp(server, deadline,
                         reached ? net::RefusedConnection::kFinal : net::RefusedConnection::kRetry);
    net::client_handshake(fd.get(), net::Hello{net::ConnectionKind::kStore, rank, token}, deadline,
                          peer);
    reached = true;
    return fd;
  }

  // Sends one request and returns the response payload. A connection that failed mid-call is
  // dropped (its stream position is unknown); the next call opens a fresh one.
  std::vector<std::byte> call(net::wire::Writer& request, Deadline send_deadline,
                              Deadline reply_deadline) {
    net::Fd fd;
    {
      std::lock_guard lock(mutex);
      if (!idle.empty()) {
        fd = std::move(idle.back());
        idle.pop_back();
      }
    }
    if (!fd.valid()) fd = open_connection(send_deadline);
    sp::send_frame(fd.get(), request, send_deadline, peer);
    std::vector<std::byte> reply = sp::receive_frame(fd.get(), reply_deadline, peer);
    std::lock_guard lock(mutex);
    idle.push_back(std::move(fd));
    return reply;
  }
};

namespace {

// Reads the status byte; rethrows a server-side failure as the Error it was.
sp::Status read_status(net::wire::Reader& r) {
  auto status = static_cast<sp::Status>(r.u8());
  if (status == sp::Status::kFailed) {
    auto code = static_cast<ErrorCode>(r.u8());
    throw Error(code, r.str());
  }
  return status;
}

}  // namespace

TcpStore::TcpStore(const net::Endpoint& server, std::string job_token, int rank,
                   Deadline connect_deadline, std::chrono::milliseconds request_timeout)
    : state_(std::make_unique<State>()) {
  state_->request_timeout = request_timeout;
  state_->server = server;
  state_->token = std::move(job_token);
  state_->rank = rank;
  state_->peer = "store at " + server.to_string();
  net::Fd fd = state_->open_connection(connect_deadline);
  state_->local_address = net::local_address(fd.get());
  state_->idle.push_back(std::move(fd));
}

TcpStore::~TcpStore() = default;

void TcpStore::set(const std::string& key, const std::string& value) {
  net::wire::Writer w = sp::encode_request({.op = sp::Op::kSet, .key = key, .value = value});
  Deadline deadline = Deadline::after(state_->request_timeout);
  auto reply = state_->call(w, deadline, deadline);
  net::wire::Reader r(reply, "store reply");
  read_status(r);
}

std::string TcpStore::get(const std::string& key, Deadline deadline) {
  net::wire::Writer w =
      sp::encode_request({.op = sp::Op::kGet, .key = key, .timeout_ms = sp::timeout_ms(deadline)});
  std::vector<std::byte> reply;
  try {
    reply = state_->call(w, deadline, with_grace(deadline));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kTimeout) throw get_timeout_error(describe(), key);
    throw;
  }
  net::wire::Reader r(reply, "store reply");
  if (read_status(r) == sp::Status::kTimeout) throw get_timeout_error(describe(), key);
  return r.str();
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  net::wire::Writer w = sp::encode_request({.op = sp::Op::kAdd, .key = key, .delta = delta});
  Deadline deadline = Deadline::after(state_->request_timeout);
  auto reply = state_->call(w, deadline, deadline);
  net::wire::Reader r(reply, "store reply");
  read_status(r);
  return r.i64();
}

std::vector<std::string> TcpStore::missing(const std::vector<std::string>& keys) {
  net::wire::Writer w = sp::encode_request({.op = sp::Op::kMissing, .keys = keys});
  Deadline deadline = Deadline::after(state_->request_timeout);
  auto reply = state_->call(w, deadline, deadline);
  net::wire::Reader r(reply, "store reply");
  read_status(r);
  return sp::get_keys(r);
}

void TcpStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  net::wire::Writer w = sp::encode_request(
      {.op = sp::Op::kWait, .timeout_ms = sp::timeout_ms(deadline), .keys = keys});
  std::vector<std::byte> reply;
  try {
    reply = state_->call(w, deadline, with_grace(deadline));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kTimeout) throw wait_timeout_error(describe(), keys);
    throw;
  }
  net::wire::Reader r(reply, "store reply");
  if (read_status(r) == sp::Status::kTimeout) throw wait_timeout_error(describe(), sp::get_keys(r));
}

bool TcpStore::remove(const std::string& key) {
  net::wire::Writer w = sp::encode_request({.op = sp::Op::kDelete, .key = key});
  Deadline deadline = Deadline::after(state_->request_timeout);
  auto reply = state_->call(w, deadline, deadline);
  net::wire::Reader r(reply, "store reply");
  read_status(r);
  return r.u8() != 0;
}

std::string TcpStore::describe() const {
  return "tcp " + state_->server.to_string();
}

std::string TcpStore::local_address() const {
  return state_->local_address;
}

}  // namespace tutti::bootstrap
