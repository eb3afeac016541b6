// Decoding store requests from bytes: every request the client encodes reads back the same, and
// whatever else arrives is a kMismatch naming the peer, never a crash or an unbounded wait.
#include "bootstrap/store_protocol.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace tutti::bootstrap::store_protocol {
namespace {

std::vector<std::byte> payload_of(net::wire::Writer frame) {
  auto bytes = frame.view();
  return {bytes.begin() + 4, bytes.end()};
}

std::string mismatch(std::span<const std::byte> payload) {
  try {
    decode_request(payload, "10.0.0.9:4000");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find("10.0.0.9:4000"), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

TEST(StoreProtocol, EveryRequestReadsBackAsEncoded) {
  const std::vector<Request> requests = {
      {.op = Op::kSet, .key = "k", .value = std::string("v\0w", 3)},
      {.op = Op::kGet, .key = "job/tcp/3", .timeout_ms = 1500},
      {.op = Op::kGet, .key = "", .timeout_ms = -1},
      {.op = Op::kAdd, .key = "n", .delta = -7},
      {.op = Op::kMissing, .keys = {"a", "", "c"}},
      {.op = Op::kWait, .timeout_ms = 0, .keys = {"x"}}};
  for (const Request& sent : requests) {
    Request got = decode_request(payload_of(encode_request(sent)), "peer");
    EXPECT_EQ(got.op, sent.op);
    EXPECT_EQ(got.key, sent.key);
    EXPECT_EQ(got.value, sent.value);
    EXPECT_EQ(got.delta, sent.delta);
    EXPECT_EQ(got.timeout_ms, sent.timeout_ms);
    EXPECT_EQ(got.keys, sent.keys);
  }
}

TEST(StoreProtocol, MalformedRequestsAreAMismatchNamingThePeer) {
  std::vector<std::byte> set =
      payload_of(encode_request({.op = Op::kSet, .key = "k", .value = "v"}));
  EXPECT_NE(mismatch(std::span(set).first(set.size() - 1)).find("ends early"), std::string::npos);
  set.push_back(std::byte{0});
  EXPECT_NE(mismatch(set).find("1 bytes after"), std::string::npos);
  EXPECT_NE(mismatch(std::vector<std::byte>{std::byte{99}}).find("unknown operation 99"),
            std::string::npos);
  EXPECT_NE(mismatch(std::vector<std::byte>{}), "");
  std::vector<std::byte> wait =
      payload_of(encode_request({.op = Op::kWait, .timeout_ms = -2, .keys = {}}));
  EXPECT_NE(mismatch(wait).find("-2 ms"), std::string::npos);
  // A key count far beyond what the payload holds ends early instead of allocating for it.
  net::wire::Writer many;
  many.u8(static_cast<uint8_t>(Op::kMissing));
  many.u32(0xffffffff);
  EXPECT_NE(mismatch(many.view()).find("ends early"), std::string::npos);
}

TEST(StoreProtocol, LongTimeoutsAreCutToTheLongestWait) {
  Request got = decode_request(
      payload_of(encode_request({.op = Op::kGet, .key = "k", .timeout_ms = INT64_MAX})), "peer");
  EXPECT_EQ(got.timeout_ms, kMaxTimeoutMs);
}

TEST(StoreProtocol, FrameLengthAboveTheLimitIsRefused) {
  std::array<std::byte, 4> header{std::byte{0xff}, std::byte{0xff}, std::byte{0xff},
                                  std::byte{0x7f}};
  try {
    frame_length(header, "10.0.0.9:4000");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMismatch);
  }
  std::array<std::byte, 4> small{std::byte{5}, std::byte{0}, std::byte{0}, std::byte{0}};
  EXPECT_EQ(frame_length(small, "peer"), 5u);
}

}  // namespace
}  // namespace tutti::bootstrap::store_protocol
