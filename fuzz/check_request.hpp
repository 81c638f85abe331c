// Any byte string as the JSON body of a server request, read field by field as the handlers read it: a 400
// (HttpError) with one short line, or values of the types asked for; never a crash, however deep or large.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "check.hpp"
#include "server/http_error.hpp"
#include "server/request.hpp"

namespace lstmlm::fuzz {

inline void check_request(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    server::Body b(text);
    auto guard = [](auto&& get) {
      try {
        get();
      } catch (const server::HttpError& e) {
        require_short(e);
      }
    };
    guard([&] { b.str("text"); });
    guard([&] { b.boolean("stream"); });
    guard([&] { b.integer("top", 0, 1000); });
    guard([&] { b.number("temperature", 0, 1000); });
    guard([&] { b.strings("contexts", 64); });
    guard([&] { b.ids("ids", 64, 100); });
    if (const auto* v = b.raw("state"))
      require(server::shown(*v).size() < 1024, "request: a quoted value too long");
    guard([&] { b.done(); });
  } catch (const server::HttpError& e) {
    require_short(e);
  }
}

}  // namespace lstmlm::fuzz
