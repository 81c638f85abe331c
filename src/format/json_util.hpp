// Strict JSON reading for the model files: duplicate keys refused, errors on one line naming the file.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lstmlm::format {

// Opens `path` read-only for a reader of the model files: anything but a regular file (a directory, a
// FIFO, a device) is refused before it is read, so a FIFO cannot block the loader. Returns the
// descriptor; throws ModelError "<path>: cannot open: <reason>" or "<path>: not a regular file".
int open_regular(const std::string& path);

// Reads a whole regular file (open_regular's checks) of at most `max_bytes`; throws ModelError naming
// `path`. The size is checked before reading and again while reading (the file may grow meanwhile).
std::string read_file(const std::string& path, uint64_t max_bytes);

// Parses `text`; a syntax error, invalid UTF-8, a NUL byte anywhere (bytes after one would otherwise be
// ignored), nesting deeper than lstmlm::kMaxJsonDepth or a key repeated inside one object throws ModelError
// naming `file` (and `place` inside it, e.g. "header", as "<file>: <place>: ...").
// nlohmann keeps the last of duplicate keys silently, so they are checked here.
nlohmann::json parse_json(std::string_view text, const std::string& file, const std::string& place = {});

// A string from a file made safe for a one-line message: control characters and invalid UTF-8
// escaped, cut after `max` bytes, wrapped in single quotes.
std::string quoted(std::string_view s, size_t max = 80);

// The compact JSON text of `j` (dump()'s), cut once it holds more than `max_bytes` bytes. It walks the
// value with a stack of its own: a value nested deeper than the C++ stack allows is shown, not a crash.
std::string dump_prefix(const nlohmann::json& j, size_t max_bytes);

// A JSON value as shown after "found" in messages (compact, cut to a short length).
std::string brief(const nlohmann::json& j);

}  // namespace lstmlm::format
