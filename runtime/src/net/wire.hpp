// Little-endian encoding of the bootstrap wire messages (handshake, store protocol). Explicit byte
// shuffling instead of memcpy of structs, so the format does not depend on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace tutti::net::wire {

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i32(int32_t v) { put(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  void raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
  }
  // A length-prefixed byte string.
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s);
  }
  std::vector<std::byte>& bytes() { return bytes_; }
  std::span<const std::byte> view() const { return bytes_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
  }
  std::vector<std::byte> bytes_;
};

// Reads from a received buffer; running past its end is a protocol error (kMismatch) naming `what`.
class Reader {
 public:
  Reader(std::span<const std::byte> data, std::string_view what) : data_(data), what_(what) {}
  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  int32_t i32() { return static_cast<int32_t>(static_cast<uint32_t>(get(4))); }
  int64_t i64() { return static_cast<int64_t>(get(8)); }
  std::string raw(size_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(data_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  std::string str() { return raw(u32()); }
  bool done() const { return pos_ == data_.size(); }
  size_t position() const { return pos_; }

 private:
  void need(size_t n) const {
    if (data_.size() - pos_ < n)
      throw make_error(ErrorCode::kMismatch,
                       "malformed {}: message ends early (needed {} more bytes, {} left); are both "
                       "sides running the same tutti version?",
                       what_, n, data_.size() - pos_);
  }
  uint64_t get(int n) {
    need(static_cast<size_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
    pos_ += static_cast<size_t>(n);
    return v;
  }
  std::span<const std::byte> data_;
  std::string_view what_;
  size_t pos_ = 0;
};

}  // namespace tutti::net::wire
