// A stream: one caller's sequence between calls (a keyboard's committed text, a decoder's hypothesis, a
// server session): the state after the tokens fed, the log-probs of the next token, and how many tokens
// were fed. The server's sessions, Python's lstmlm.State and the C API's lstmlm_state are each one, and
// serialize to the same bytes, so a stream exported from any of them continues in any other with the same
// bits.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"

namespace lstmlm::tasks {

struct Stream {
  State state;
  // ln p of every next token after `state`; empty while the stream has no context (nothing fed and no
  // start token) or the distribution was not asked for yet.
  std::vector<float> next;
  int64_t fed = 0;  // tokens fed since the stream began (a start token included)
};

// Advances stream r by tokens[r], every stream in one engine call (batch-invariant: each gets the numbers it
// alone gets). Each keeps its new state, the next distribution after its last token, and its count; a stream
// given no tokens is left as it is. `logprobs`, when given, gets per stream the ln p of each token fed: the
// first from the stream's next distribution (NaN when it has none), the others from the call. The engine runs
// before any stream changes: a failure leaves them as they were. The one advance of the server's sessions,
// Python's BaseScore and the C API's lstmlm_step_batch.
void advance(Engine& engine, std::span<Stream* const> streams, const Sequences& tokens,
             std::vector<std::vector<float>>* logprobs = nullptr);

// The serialized stream (docs/c-api.md, "The serialized state"): little-endian,
//   "LSTMLMST", u32 format (2), u64 the model's fingerprint, i64 tokens fed, u32 L, u32 N (V, or 0 without
//   a next distribution), L x (u32 h width, u32 c width), the h floats of every layer, the c floats, the N
//   floats of next.
inline constexpr uint32_t kStreamFormat = 2;
// Format 3, for a state on the double-precision path (ModelConfig::exact_path): format 2, then u32 L, u32 L,
// the L h64 widths, the L c64 widths (u32 each), the h64 doubles of every layer, the c64 doubles, u32 n and
// the n int32 ids of the direct connections' history (newest first).
inline constexpr uint32_t kStreamFormatExact = 3;
inline constexpr uint32_t kMaxStreamHistory = 1u << 16;
// `fingerprint`: Model::fingerprint() of the model the stream runs on. Format 2, or 3 for a state with
// double parts.
std::string stream_bytes(const Stream& s, uint64_t fingerprint);

// What a serialized stream holds, checked for its own consistency only (magic, format, lengths, finite
// values: h and c finite, next neither NaN nor +inf): the bytes of any model.
struct StreamBytes {
  Stream stream;
  uint64_t fingerprint = 0;  // 0: format 1, which carried none
  uint32_t format = kStreamFormat;
};
// Throws InputError naming what is wrong ("the bytes are truncated: N bytes end inside an h vector").
// Reads format 1 too (the C API's bytes before format 2: no fingerprint, tokens fed unknown, read as 0).
StreamBytes read_stream_bytes(std::string_view bytes);

// The stream the bytes hold, checked against `model`: its fingerprint (format 2), its layers' widths and its
// vocabulary. InputError otherwise, saying which.
Stream stream_from_bytes(const Model& model, std::string_view bytes);
// The checks of stream_from_bytes on a stream already read (a pickle read without its model).
void check_stream(const Model& model, const StreamBytes& s);
// The same on a stream in memory: `fingerprint` that of the model that wrote it, 0 when unknown (format 1).
void check_stream(const Model& model, const Stream& s, uint64_t fingerprint);

}  // namespace lstmlm::tasks
