// libFuzzer target for the store server's request decoding: the bytes a client (any client holding
// the token, or a corrupt stream) sends after the handshake. The input is one frame: a 4-byte
// length, then the payload. Beyond "no crash, no sanitizer report" it checks what decoding
// promises: every failure is a kMismatch naming the peer, and every request it accepts encodes back
// to a frame that decodes to the same request.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#include "bootstrap/store_protocol.hpp"
#include "tutti/error.hpp"

namespace {

namespace sp = tutti::bootstrap::store_protocol;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "store protocol fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

bool same(const sp::Request& a, const sp::Request& b) {
  return a.op == b.op && a.key == b.key && a.value == b.value && a.delta == b.delta &&
         a.timeout_ms == b.timeout_ms && a.keys == b.keys;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
  if (input.size() < 4) return 0;
  const std::string peer = "fuzz peer";
  try {
    const uint32_t length = sp::frame_length(input.first<4>(), peer);
    check(length <= sp::kMaxFrameBytes, "frame_length accepted a length above the limit");
    // The server reads exactly `length` bytes; a shorter input is a connection that closed early.
    const auto payload = input.subspan(4, std::min<size_t>(length, input.size() - 4));
    const sp::Request request = sp::decode_request(payload, peer);
    check(request.timeout_ms >= -1 && request.timeout_ms <= sp::kMaxTimeoutMs,
          "a decoded timeout is out of range");
    // What the server does with it next: must not overflow the clock.
    (void)sp::deadline_from_ms(request.timeout_ms).remaining();
    tutti::net::wire::Writer again = sp::encode_request(request);
    check(same(sp::decode_request(again.view().subspan(4), peer), request),
          "an accepted request does not survive encode and decode");
  } catch (const tutti::Error& e) {
    check(e.code() == tutti::ErrorCode::kMismatch, "decoding threw an error other than kMismatch");
    check(std::string_view(e.what()).find(peer) != std::string_view::npos,
          "the error does not name the peer");
  }
  return 0;
}
