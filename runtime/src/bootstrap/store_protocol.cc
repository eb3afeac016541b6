#include "bootstrap/store_protocol.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include "core/error.hpp"
#include "net/socket.hpp"

namespace tutti::bootstrap::store_protocol {

net::wire::Writer begin_frame() {
  net::wire::Writer w;
  w.u32(0);
  return w;
}

void send_frame(int fd, net::wire::Writer& frame, Deadline deadline, const std::string& peer) {
  auto& bytes = frame.bytes();
  uint32_t length = static_cast<uint32_t>(bytes.size() - 4);
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  net::write_all(fd, bytes, deadline, peer);
}

uint32_t frame_length(std::span<const std::byte, 4> header, const std::string& peer) {
  net::wire::Reader r(header, "store frame");
  uint32_t length = r.u32();
  if (length > kMaxFrameBytes)
    throw make_error(ErrorCode::kMismatch,
                     "store frame from {} claims {} bytes (limit {}); the stream is corrupt or the "
                     "peer runs another protocol",
                     peer, length, kMaxFrameBytes);
  return length;
}

std::vector<std::byte> receive_frame(int fd, Deadline deadline, const std::string& peer) {
  std::array<std::byte, 4> header{};
  net::read_exact(fd, header, deadline, peer);
  std::vector<std::byte> payload(frame_length(header, peer));
  net::read_exact(fd, payload, deadline, peer);
  return payload;
}

namespace {

int64_t get_timeout(net::wire::Reader& r, const std::string& peer) {
  const int64_t ms = r.i64();
  if (ms < -1)
    throw make_error(
        ErrorCode::kMismatch,
        "store request from {} asks to wait {} ms; are both sides running the same tutti "
        "version?",
        peer, ms);
  return std::min(ms, kMaxTimeoutMs);
}

}  // namespace

Request decode_request(std::span<const std::byte> payload, const std::string& peer) {
  const std::string what = "store request from " + peer;
  net::wire::Reader r(payload, what);
  Request request;
  const uint8_t op = r.u8();
  request.op = static_cast<Op>(op);
  switch (request.op) {
    case Op::kSet:
      request.key = r.str();
      request.value = r.str();
      break;
    case Op::kGet:
      request.key = r.str();
      request.timeout_ms = get_timeout(r, peer);
      break;
    case Op::kAdd:
      request.key = r.str();
      request.delta = r.i64();
      break;
    case Op::kMissing:
      request.keys = get_keys(r);
      break;
    case Op::kWait:
      request.timeout_ms = get_timeout(r, peer);
      request.keys = get_keys(r);
      break;
    case Op::kDelete:
      request.key = r.str();
      break;
    default:
      throw make_error(
          ErrorCode::kMismatch,
          "{} has unknown operation {}; are both sides running the same tutti version?", what, op);
  }
  if (!r.done())
    throw make_error(
        ErrorCode::kMismatch,
        "{} has {} bytes after its operation {}; are both sides running the same tutti "
        "version?",
        what, payload.size() - r.position(), op);
  return request;
}

net::wire::Writer encode_request(const Request& request) {
  net::wire::Writer w = begin_frame();
  w.u8(static_cast<uint8_t>(request.op));
  switch (request.op) {
    case Op::kSet:
      w.str(request.key);
      w.str(request.value);
      break;
    case Op::kGet:
      w.str(request.key);
      w.i64(request.timeout_ms);
      break;
    case Op::kAdd:
      w.str(request.key);
      w.i64(request.delta);
      break;
    case Op::kMissing:
      put_keys(w, request.keys);
      break;
    case Op::kWait:
      w.i64(request.timeout_ms);
      put_keys(w, request.keys);
      break;
    case Op::kDelete:
      w.str(request.key);
      break;
  }
  return w;
}

void put_keys(net::wire::Writer& w, const std::vector<std::string>& keys) {
  w.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
}

std::vector<std::string> get_keys(net::wire::Reader& r) {
  uint32_t n = r.u32();
  std::vector<std::string> keys;
  // Not reserve(n): n comes off the wire; each key costs at least 4 bytes of the frame anyway.
  for (uint32_t i = 0; i < n; ++i) keys.push_back(r.str());
  return keys;
}

int64_t timeout_ms(Deadline deadline) {
  if (deadline.at() == Deadline::Clock::time_point::max()) return -1;
  return std::min(std::chrono::ceil<std::chrono::milliseconds>(deadline.remaining()).count(),
                  kMaxTimeoutMs);
}

Deadline deadline_from_ms(int64_t ms) {
  if (ms < 0) return Deadline::never();
  return Deadline::after(std::chrono::milliseconds(std::min(ms, kMaxTimeoutMs)));
}

}  // namespace tutti::bootstrap::store_protocol
