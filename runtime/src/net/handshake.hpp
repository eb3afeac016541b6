// Every tutti connection (store or data) opens with a Hello: magic, protocol version, what kind of
// connection it is, the sender's rank and the job token. The receiver refuses anything else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/deadline.hpp"

namespace tutti::net {

inline constexpr uint32_t kMagic = 0x54555454;  // "TUTT"
inline constexpr uint16_t kProtocolVersion = 1;

enum class ConnectionKind : uint16_t { kStore = 1, kStoreLifeline = 2, kData = 3 };

struct Hello {
  ConnectionKind kind = ConnectionKind::kStore;
  int32_t rank = -1;  // -1 for clients that are not ranks (tuttirun, tools)
  std::string token;
};

// Decodes a Hello from bytes as they arrive, so a server can run many handshakes side by side
// without a thread or a blocking read per connection. It never asks for more than the header plus
// the longest token tutti accepts, whatever a stranger sends.
class HelloDecoder {
 public:
  explicit HelloDecoder(std::string peer) : peer_(std::move(peer)) {}

  // How many more bytes the Hello needs (0: complete).
  size_t wanted() const;
  // Takes at most wanted() bytes. Throws Error(kAuth) as soon as the header shows that this is
  // not a tutti Hello (magic, version, kind, token length), naming the peer.
  void feed(std::span<const std::byte> bytes);
  bool complete() const { return wanted() == 0; }
  // The Hello, once complete; throws Error(kAuth) when its token is not expected_token (compared
  // in constant time).
  Hello finish(const std::string& expected_token) const;

 private:
  std::string peer_;
  std::vector<std::byte> received_;
  size_t token_bytes_ = 0;  // known once the header is in
};

// The whole of a received message as one Hello, for callers (and the fuzz target) that hold all
// the bytes: feeds them to a HelloDecoder; too few bytes or bytes left over are Error(kAuth).
Hello decode_hello(std::span<const std::byte> message, const std::string& expected_token,
                   const std::string& peer);

// The one-byte verdicts a server sends after reading a Hello.
inline constexpr std::byte kHelloAccepted{1};
inline constexpr std::byte kHelloRefused{0};

// Sends hello, then waits for the one-byte verdict. Throws Error(kAuth) when refused.
void client_handshake(int fd, const Hello& hello, Deadline deadline, const std::string& peer);

// Reads a Hello, checks magic/version/token (constant-time compare) and the expected kind, and
// sends the verdict. Returns the Hello on success; throws Error(kAuth) (after telling the client)
// otherwise.
Hello server_handshake(int fd, const std::string& expected_token, Deadline deadline,
                       const std::string& peer);

}  // namespace tutti::net
