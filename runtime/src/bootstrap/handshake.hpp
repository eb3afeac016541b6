// Every tutti connection (store or data) opens with a Hello: magic, protocol version, what kind of
// connection it is, the sender's rank and the job token. The receiver refuses anything else.
#pragma once

#include <cstdint>
#include <string>

#include "core/deadline.hpp"

namespace tutti::bootstrap {

inline constexpr uint32_t kMagic = 0x54555454;  // "TUTT"
inline constexpr uint16_t kProtocolVersion = 1;

enum class ConnectionKind : uint16_t { kStore = 1, kStoreLifeline = 2, kData = 3 };

struct Hello {
  ConnectionKind kind = ConnectionKind::kStore;
  int32_t rank = -1;  // -1 for clients that are not ranks (tuttirun, tools)
  std::string token;
};

// Sends hello, then waits for the one-byte verdict. Throws Error(kAuth) when refused.
void client_handshake(int fd, const Hello& hello, Deadline deadline, const std::string& peer);

// Reads a Hello, checks magic/version/token (constant-time compare) and the expected kind, and sends
// the verdict. Returns the Hello on success; throws Error(kAuth) (after telling the client) otherwise.
Hello server_handshake(int fd, const std::string& expected_token, Deadline deadline, const std::string& peer);

}  // namespace tutti::bootstrap
