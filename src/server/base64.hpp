// Base64 (RFC 4648, with padding) for the bytes a JSON body carries: a session's serialized stream.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace lstmlm::server {

std::string base64_encode(std::string_view bytes);
// The bytes, or nothing when `text` is not canonical padded base64 (whitespace included).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace lstmlm::server
