// The heartbeats a StoreLifeline sends when the launcher gave its process a launch id, and that
// TcpStoreServer::watch_heartbeats reads: a hello once ('I', the launch id, the pid), then one
// byte ('h') per beat. The one place the layout is written down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "net/wire.hpp"

namespace tutti::bootstrap::lifeline_beat {

inline constexpr uint8_t kHello = 'I';
inline constexpr uint8_t kBeat = 'h';
inline constexpr size_t kHelloBytes = 1 + 8 + 4;

struct Hello {
  int64_t launch_id = -1;
  int32_t pid = 0;
};

inline std::vector<std::byte> hello(const Hello& h) {
  net::wire::Writer w;
  w.u8(kHello);
  w.i64(h.launch_id);
  w.i32(h.pid);
  return std::move(w.bytes());
}

// `bytes`: the first kHelloBytes the client sent, kHello first.
inline Hello read_hello(std::span<const std::byte> bytes) {
  net::wire::Reader r(bytes, "lifeline hello");
  r.u8();
  Hello h;
  h.launch_id = r.i64();
  h.pid = r.i32();
  return h;
}

}  // namespace tutti::bootstrap::lifeline_beat
