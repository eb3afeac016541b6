// Base64 (RFC 4648, with padding) for the rank agent's request: argv and environment are bytes,
// not text, and JSON strings must be UTF-8, so they travel encoded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tutti::launcher {

std::string base64_encode(std::string_view bytes);
// nullopt when `text` is not canonical padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace tutti::launcher
