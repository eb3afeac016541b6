#include "core/base64.hpp"

#include <array>
#include <cstdint>

namespace tutti {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_values() {
  std::array<int8_t, 256> v{};
  v.fill(-1);
  for (size_t i = 0; i < kAlphabet.size(); ++i)
    v[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return v;
}
constexpr std::array<int8_t, 256> kValues = make_values();

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k)
      group = group << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k)
      out.push_back(k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    size_t pad = 0;
    uint32_t group = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && last && k >= 2) {
        ++pad;
        group <<= 6;
        continue;
      }
      const int8_t v = kValues[static_cast<unsigned char>(c)];
      if (v < 0 || pad > 0) return std::nullopt;  // a stray character, or data after padding
      group = group << 6 | static_cast<uint32_t>(v);
    }
    const size_t n = 3 - pad;
    for (size_t k = 0; k < n; ++k) out.push_back(static_cast<char>((group >> (16 - 8 * k)) & 0xff));
    // Canonical only: bits the padding drops must be zero, so one text decodes one way.
    if (pad > 0 && (group & ((1u << (8 * pad)) - 1)) != 0) return std::nullopt;
  }
  return out;
}

}  // namespace tutti
