// libFuzzer target for the Hello handshake's decoder: the first bytes anyone who can reach a store
// or data port sends, before any token is checked. Beyond "no crash, no sanitizer report" it checks
// what decoding promises: it never asks for more than a header and the longest token, every failure
// is a kAuth naming the peer, a Hello is accepted only with the expected token, and feeding the
// bytes one at a time (as a slow sender delivers them) gives the same answer as all at once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "net/handshake.hpp"
#include "tutti/error.hpp"

namespace {

using tutti::net::Hello;
using tutti::net::HelloDecoder;

// Header (16 bytes) plus the longest token tutti accepts (4096).
constexpr size_t kMostWanted = 16 + 4096;
const std::string kToken = "fuzz-token";
const std::string kPeer = "fuzz peer";

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "handshake fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// The verdict on `message` fed in pieces of at most `piece` bytes: the Hello, or nullopt after
// checking the error it threw.
std::optional<Hello> verdict(std::span<const std::byte> message, size_t piece) {
  try {
    HelloDecoder decoder(kPeer);
    while (!message.empty() && !decoder.complete()) {
      check(decoder.wanted() <= kMostWanted, "the decoder asked for more than a Hello can hold");
      const size_t n = std::min({message.size(), decoder.wanted(), piece});
      decoder.feed(message.first(n));
      message = message.subspan(n);
    }
    if (!message.empty()) return std::nullopt;  // bytes after a complete Hello: not one Hello
    Hello hello = decoder.finish(kToken);
    check(hello.token == kToken, "a Hello with another token was accepted");
    return hello;
  } catch (const tutti::Error& e) {
    check(e.code() == tutti::ErrorCode::kAuth, "decoding threw an error other than kAuth");
    check(std::string_view(e.what()).find(kPeer) != std::string_view::npos,
          "the error does not name the peer");
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> message(reinterpret_cast<const std::byte*>(data), size);
  const std::optional<Hello> whole = verdict(message, SIZE_MAX);
  const std::optional<Hello> bytewise = verdict(message, 1);
  check(whole.has_value() == bytewise.has_value(), "byte-by-byte feeding changed the verdict");
  if (whole)
    check(whole->kind == bytewise->kind && whole->rank == bytewise->rank,
          "byte-by-byte feeding changed the Hello");
  // decode_hello is the same decoder over the whole message.
  try {
    Hello h = tutti::net::decode_hello(message, kToken, kPeer);
    check(whole.has_value() && h.rank == whole->rank,
          "decode_hello accepted what the decoder refused");
  } catch (const tutti::Error& e) {
    check(!whole.has_value(), "decode_hello refused what the decoder accepted");
    check(e.code() == tutti::ErrorCode::kAuth, "decode_hello threw an error other than kAuth");
  }
  return 0;
}
