// Any byte string as a serialized stream (the bytes every front end exchanges: lstmlm_state_deserialize,
// Model.state_from_bytes, a session's "bytes"): an InputError, or a stream whose bytes written again are the
// input (format 2) and which the checks against a model either refuse or accept, never crash on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "check.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/tasks/stream.hpp"

namespace lstmlm::fuzz {

inline void check_stream(const uint8_t* data, size_t size) {
  static const auto model = Model::random(7, 3, 4, 2, 1);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto s = tasks::read_stream_bytes(bytes);
    if (s.format >= tasks::kStreamFormat)
      require(tasks::stream_bytes(s.stream, s.fingerprint) == bytes,
              "stream: read then written, other bytes");
    try {
      tasks::check_stream(*model, s);
    } catch (const InputError& e) {
      require_short(e);
    }
  } catch (const InputError& e) {
    require_short(e);
  }
}

}  // namespace lstmlm::fuzz
