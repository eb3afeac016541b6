#include "net/handshake.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

#include "core/error.hpp"
#include "net/socket.hpp"
#include "net/wire.hpp"

namespace tutti::net {
namespace {

// magic u32, version u16, kind u16, rank i32, token_len u32.
constexpr size_t kHeaderBytes = 16;
// Tokens are short secrets; the cap keeps a stranger's garbage from making us allocate much.
constexpr uint32_t kMaxTokenBytes = 4096;

// Compares without an early exit, so the time taken says nothing about where the tokens differ
// (only their lengths, which are not secret).
bool tokens_equal(const std::string& expected, const std::string& received) {
  unsigned diff = expected.size() == received.size() ? 0u : 1u;
  for (size_t i = 0; i < received.size(); ++i) {
    unsigned char e =
        expected.empty() ? 0 : static_cast<unsigned char>(expected[i % expected.size()]);
    diff |= e ^ static_cast<unsigned char>(received[i]);
  }
  return diff == 0;
}

bool known_kind(uint16_t kind) {
  return kind == static_cast<uint16_t>(ConnectionKind::kStore) ||
         kind == static_cast<uint16_t>(ConnectionKind::kStoreLifeline) ||
         kind == static_cast<uint16_t>(ConnectionKind::kData);
}

// Tells the client it was refused. Best effort: it may already be gone, and the refusal is
// reported to our caller either way.
void send_refusal(int fd, Deadline deadline, const std::string& peer) noexcept {
  try {
    std::array<std::byte, 1> verdict{kHelloRefused};
    write_all(fd, verdict, deadline, peer);
  } catch (const Error&) {
  }
}

}  // namespace

void client_handshake(int fd, const Hello& hello, Deadline deadline, const std::string& peer) {
  if (hello.token.size() > kMaxTokenBytes)
    throw make_error(ErrorCode::kConfig,
                     "the job token is {} bytes long; tutti accepts at most {} (TUTTI_JOB_TOKEN)",
                     hello.token.size(), kMaxTokenBytes);
  wire::Writer w;
  w.u32(kMagic);
  w.u16(kProtocolVersion);
  w.u16(static_cast<uint16_t>(hello.kind));
  w.i32(hello.rank);
  w.str(hello.token);
  write_all(fd, w.view(), deadline, peer);

  std::array<std::byte, 1> verdict{};
  try {
    read_exact(fd, verdict, deadline, peer);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kPeerFailure) throw;
    throw make_error(ErrorCode::kPeerFailure,
                     "{} closed the connection during the handshake without a verdict; is it a "
                     "tutti endpoint of this job? ({})",
                     peer, e.what());
  }
  if (verdict[0] != kHelloAccepted)
    throw make_error(ErrorCode::kAuth,
                     "{} refused our handshake (rank {}): the job token, protocol version (ours is "
                     "{}) or connection kind did not match; check that TUTTI_JOB_TOKEN is the same "
                     "for every rank and that all hosts run the same tutti build",
                     peer, hello.rank, kProtocolVersion);
}

size_t HelloDecoder::wanted() const {
  if (received_.size() < kHeaderBytes) return kHeaderBytes - received_.size();
  return kHeaderBytes + token_bytes_ - received_.size();
}

void HelloDecoder::feed(std::span<const std::byte> bytes) {
  if (bytes.size() > wanted())
    throw make_error(ErrorCode::kInternal, "HelloDecoder fed {} bytes, wanted only {}",
                     bytes.size(), wanted());
  const bool had_header = received_.size() >= kHeaderBytes;
  received_.insert(received_.end(), bytes.begin(), bytes.end());
  if (had_header || received_.size() < kHeaderBytes) return;

  wire::Reader r(std::span(received_.data(), kHeaderBytes), "handshake");
  const uint32_t magic = r.u32();
  const uint16_t version = r.u16();
  const uint16_t kind = r.u16();
  const int32_t rank = r.i32();
  const uint32_t token_len = r.u32();
  if (magic != kMagic)
    throw make_error(ErrorCode::kAuth,
                     "refused connection from {}: it is not a tutti client (magic 0x{:08x}, "
                     "expected 0x{:08x}); something else is talking to this port",
                     peer_, magic, kMagic);
  if (version != kProtocolVersion)
    throw make_error(ErrorCode::kAuth,
                     "refused connection from {} (rank {}): it speaks tutti protocol version {}, "
                     "this side speaks version {}; run the same tutti build on every host",
                     peer_, rank, version, kProtocolVersion);
  if (!known_kind(kind))
    throw make_error(ErrorCode::kAuth,
                     "refused connection from {} (rank {}): unknown connection kind {}", peer_,
                     rank, kind);
  if (token_len > kMaxTokenBytes)
    throw make_error(ErrorCode::kAuth,
                     "refused connection from {} (rank {}): its job token claims {} bytes, more "
                     "than the {} allowed",
                     peer_, rank, token_len, kMaxTokenBytes);
  token_bytes_ = token_len;
}

Hello HelloDecoder::finish(const std::string& expected_token) const {
  if (!complete())
    throw make_error(ErrorCode::kAuth,
                     "refused connection from {}: its handshake ended after {} bytes, {} short",
                     peer_, received_.size(), wanted());
  wire::Reader r(received_, "handshake");
  r.u32();
  r.u16();
  Hello hello;
  hello.kind = static_cast<ConnectionKind>(r.u16());
  hello.rank = r.i32();
  hello.token = r.str();
  if (!tokens_equal(expected_token, hello.token))
    throw make_error(ErrorCode::kAuth,
                     "refused connection from {} (rank {}): wrong job token ({} bytes, expected {} "
                     "bytes); every rank must get the same TUTTI_JOB_TOKEN",
                     peer_, hello.rank, hello.token.size(), expected_token.size());
  return hello;
}

Hello decode_hello(std::span<const std::byte> message, const std::string& expected_token,
                   const std::string& peer) {
  HelloDecoder decoder(peer);
  // In the pieces the decoder asks for, as a server reading the socket would.
  while (!message.empty() && !decoder.complete()) {
    const size_t n = std::min(message.size(), decoder.wanted());
    decoder.feed(message.first(n));
    message = message.subspan(n);
  }
  if (!message.empty())
    throw make_error(ErrorCode::kAuth,
                     "refused connection from {}: {} unexpected bytes after its handshake", peer,
                     message.size());
  return decoder.finish(expected_token);
}

Hello server_handshake(int fd, const std::string& expected_token, Deadline deadline,
                       const std::string& peer) {
  HelloDecoder decoder(peer);
  std::vector<std::byte> chunk;
  Hello hello;
  try {
    while (!decoder.complete()) {
      chunk.resize(decoder.wanted());
      read_exact(fd, chunk, deadline, peer);
      decoder.feed(chunk);
    }
    hello = decoder.finish(expected_token);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kAuth) send_refusal(fd, deadline, peer);
    throw;
  }
  std::array<std::byte, 1> verdict{kHelloAccepted};
  write_all(fd, verdict, deadline, peer);
  return hello;
}

}  // namespace tutti::net
