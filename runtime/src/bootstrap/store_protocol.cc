#include "bootstrap/store_protocol.hpp"

#include <array>
#include <chrono>

#include "bootstrap/socket.hpp"
#include "core/error.hpp"

namespace tutti::bootstrap::store_protocol {

wire::Writer begin_frame() {
  wire::Writer w;
  w.u32(0);
  return w;
}

void send_frame(int fd, wire::Writer& frame, Deadline deadline, const std::string& peer) {
  auto& bytes = frame.bytes();
  uint32_t length = static_cast<uint32_t>(bytes.size() - 4);
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  write_all(fd, bytes, deadline, peer);
}

std::vector<std::byte> receive_frame(int fd, Deadline deadline, const std::string& peer) {
  std::array<std::byte, 4> header{};
  read_exact(fd, header, deadline, peer);
  wire::Reader r(header, "store frame");
  uint32_t length = r.u32();
  if (length > kMaxFrameBytes)
    throw make_error(ErrorCode::kMismatch,
                     "store frame from {} claims {} bytes (limit {}); the stream is corrupt or the "
                     "peer runs another protocol",
                     peer, length, kMaxFrameBytes);
  std::vector<std::byte> payload(length);
  read_exact(fd, payload, deadline, peer);
  return payload;
}

void put_keys(wire::Writer& w, const std::vector<std::string>& keys) {
  w.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
}

std::vector<std::string> get_keys(wire::Reader& r) {
  uint32_t n = r.u32();
  std::vector<std::string> keys;
  // Not reserve(n): n comes off the wire; each key costs at least 4 bytes of the frame anyway.
  for (uint32_t i = 0; i < n; ++i) keys.push_back(r.str());
  return keys;
}

int64_t timeout_ms(Deadline deadline) {
  if (deadline.at() == Deadline::Clock::time_point::max()) return -1;
  return std::chrono::ceil<std::chrono::milliseconds>(deadline.remaining()).count();
}

Deadline deadline_from_ms(int64_t ms) {
  if (ms < 0) return Deadline::never();
  return Deadline::after(std::chrono::milliseconds(ms));
}

}  // namespace tutti::bootstrap::store_protocol
