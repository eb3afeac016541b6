// Base64 (RFC 4648, with padding), for bytes that must travel as JSON text (UTF-8 strings only):
// the rank agent's argv and environment, and etcd's keys and values in its JSON gateway.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tutti {

std::string base64_encode(std::string_view bytes);
// nullopt when `text` is not canonical padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace tutti
