// The TcpStore wire protocol, shared by TcpStoreServer and TcpStore (and so by tuttirun and the
// ranks). After the handshake each request and each response is one frame: u32 length + payload.
//
// Request payload: u8 Op, then
//   kSet      str key, str value
//   kGet      str key, i64 timeout_ms (-1 = no limit)  -- the server waits for the key
//   kAdd      str key, i64 delta
//   kMissing  u32 n, n x str key
//   kWait     i64 timeout_ms, u32 n, n x str key
//   kDelete   str key
// Response payload: u8 Status, then
//   kOk:       kGet: str value; kAdd: i64 new value; kMissing: u32 n, n x str; kDelete: u8
//              existed; others: nothing
//   kTimeout:  kGet: nothing; kWait: u32 n, n x str (the keys still missing)
//   kFailed:   u8 ErrorCode, str message (rethrown on the client as that Error)
// Strings are u32 length + bytes; integers little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "net/wire.hpp"

namespace tutti::bootstrap::store_protocol {

enum class Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kMissing = 4, kWait = 5, kDelete = 6 };
enum class Status : uint8_t { kOk = 0, kTimeout = 1, kFailed = 2 };

// Large enough for any rendezvous value, small enough that a corrupt length cannot exhaust memory.
inline constexpr uint32_t kMaxFrameBytes = 256u << 20;

// The longest wait a request may ask for (about 11.6 days, as parse::kMaxSeconds); longer ones are
// cut to it, so the server's now + timeout never overflows.
inline constexpr int64_t kMaxTimeoutMs = 1'000'000'000;

// One decoded request; which fields are set depends on op (see the table above).
struct Request {
  Op op = Op::kSet;
  std::string key{};                // kSet, kGet, kAdd, kDelete
  std::string value{};              // kSet
  int64_t delta = 0;                // kAdd
  int64_t timeout_ms = -1;          // kGet, kWait: -1 = no limit, else 0 .. kMaxTimeoutMs
  std::vector<std::string> keys{};  // kMissing, kWait
};

// Decodes a request payload (the frame without its length). A truncated payload, bytes left over,
// an unknown op or a negative timeout other than -1 is Error(kMismatch) naming `peer`.
Request decode_request(std::span<const std::byte> payload, const std::string& peer);
// The frame (length included) that decode_request reads back as `request`.
net::wire::Writer encode_request(const Request& request);

// The payload length from a frame's 4-byte header; above kMaxFrameBytes is Error(kMismatch).
uint32_t frame_length(std::span<const std::byte, 4> header, const std::string& peer);

// A Writer whose first 4 bytes are reserved for the frame length (filled in by send_frame).
net::wire::Writer begin_frame();
void send_frame(int fd, net::wire::Writer& frame, Deadline deadline, const std::string& peer);
std::vector<std::byte> receive_frame(int fd, Deadline deadline, const std::string& peer);

void put_keys(net::wire::Writer& w, const std::vector<std::string>& keys);
std::vector<std::string> get_keys(net::wire::Reader& r);

// Milliseconds left until deadline for the server side, -1 for "no limit".
int64_t timeout_ms(Deadline deadline);
Deadline deadline_from_ms(int64_t ms);

}  // namespace tutti::bootstrap::store_protocol
