#include "lstmlm/tasks/stream.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "lstmlm/error.hpp"

namespace lstmlm::tasks {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the serialized stream is little-endian, written as this CPU stores it");
static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559);

constexpr char kMagic[8] = {'L', 'S', 'T', 'M', 'L', 'M', 'S', 'T'};

class Writer {
 public:
  void bytes(const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
  template <class T>
  void value(T v) {
    bytes(&v, sizeof v);
  }
  void floats(const std::vector<float>& v) { bytes(v.data(), v.size() * sizeof(float)); }
  std::string out;
};

// Every length checked against what is left: a short buffer is an InputError saying where it ends.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  void bytes(void* out, size_t n, const char* what) {
    if (n > b_.size() - at_)
      throw InputError("the bytes are truncated: " + std::to_string(b_.size()) + " bytes end inside " + what);
    if (n > 0) std::memcpy(out, b_.data() + at_, n);
    at_ += n;
  }
  template <class T>
  T value(const char* what) {
    T v{};
    bytes(&v, sizeof v, what);
    return v;
  }
  template <class T>
  std::vector<T> array(uint32_t n, const char* what) {
    if (size_t{n} * sizeof(T) > b_.size() - at_)
      throw InputError("the bytes are truncated: " + std::to_string(b_.size()) + " bytes end inside " + what);
    std::vector<T> v(n);
    bytes(v.data(), v.size() * sizeof(T), what);
    return v;
  }
  size_t left() const { return b_.size() - at_; }
  size_t read() const { return at_; }

 private:
  std::string_view b_;
  size_t at_ = 0;
};

void check_finite(const std::vector<float>& v, const std::string& what, bool log_probs) {
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = v[i];
    // A log-prob may be -inf (a token the model rules out); nothing may be NaN, a state nothing infinite.
    if (std::isnan(x) || (std::isinf(x) && (!log_probs || x > 0)))
      throw InputError("the bytes hold " + std::string(std::isnan(x) ? "NaN" : "an infinity") + " at " +
                       what + "[" + std::to_string(i) + "]: not a state this library wrote");
  }
}

}  // namespace

std::string stream_bytes(const Stream& s, uint64_t fingerprint) {
  // A double-precision state (h64, c64 and the inputs its direct connections hash) needs format 3; every
  // other state is written as format 2, which earlier versions read.
  const bool exact = !s.state.h64.empty() || !s.state.c64.empty() || !s.state.history.empty();
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.value<uint32_t>(exact ? kStreamFormatExact : kStreamFormat);
  w.value<uint64_t>(fingerprint);
  w.value<int64_t>(s.fed);
  w.value<uint32_t>(static_cast<uint32_t>(s.state.h.size()));
  w.value<uint32_t>(static_cast<uint32_t>(s.next.size()));
  for (size_t l = 0; l < s.state.h.size(); ++l) {
    w.value<uint32_t>(static_cast<uint32_t>(s.state.h[l].size()));
    w.value<uint32_t>(static_cast<uint32_t>(l < s.state.c.size() ? s.state.c[l].size() : 0));
  }
  for (const auto& h : s.state.h) w.floats(h);
  for (const auto& c : s.state.c) w.floats(c);
  w.floats(s.next);
  if (exact) {
    w.value<uint32_t>(static_cast<uint32_t>(s.state.h64.size()));
    w.value<uint32_t>(static_cast<uint32_t>(s.state.c64.size()));
    for (const auto& v : s.state.h64) w.value<uint32_t>(static_cast<uint32_t>(v.size()));
    for (const auto& v : s.state.c64) w.value<uint32_t>(static_cast<uint32_t>(v.size()));
    for (const auto& v : s.state.h64) w.bytes(v.data(), v.size() * sizeof(double));
    for (const auto& v : s.state.c64) w.bytes(v.data(), v.size() * sizeof(double));
    w.value<uint32_t>(static_cast<uint32_t>(s.state.history.size()));
    w.bytes(s.state.history.data(), s.state.history.size() * sizeof(int32_t));
  }
  return std::move(w.out);
}

void advance(Engine& engine, std::span<Stream* const> streams, const Sequences& tokens,
             std::vector<std::vector<float>>* logprobs) {
  if (tokens.size() != streams.size())
    throw UsageError("advance: " + std::to_string(tokens.size()) + " token lists for " +
                     std::to_string(streams.size()) + " streams");
  std::vector<State> states;
  states.reserve(streams.size());
  for (const Stream* s : streams) states.push_back(s->state);
  std::vector<MatrixRM> out;
  engine.logprobs(tokens, states, out);
  if (logprobs) logprobs->assign(streams.size(), {});
  for (size_t r = 0; r < streams.size(); ++r) {
    Stream& s = *streams[r];
    const auto& ids = tokens[r];
    if (logprobs) {
      auto& lp = (*logprobs)[r];
      lp.assign(ids.size(), std::numeric_limits<float>::quiet_NaN());
      for (size_t i = 0; i < ids.size(); ++i)
        if (i > 0)
          lp[i] = out[r](Eigen::Index(i - 1), ids[i]);
        else if (!s.next.empty())
          lp[0] = s.next[size_t(ids[0])];
    }
    if (ids.empty()) continue;
    const auto last = out[r].row(Eigen::Index(ids.size() - 1));
    s.next.assign(last.data(), last.data() + last.size());
    s.state = std::move(states[r]);
    s.fed += int64_t(ids.size());
  }
}

StreamBytes read_stream_bytes(std::string_view bytes) {
  Reader r(bytes);
  char magic[sizeof kMagic];
  r.bytes(magic, sizeof magic, "the magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw InputError("not a serialized lstmlm state (the first 8 bytes are not \"LSTMLMST\")");
  StreamBytes out;
  out.format = r.value<uint32_t>("the format version");
  if (out.format < 1 || out.format > kStreamFormatExact)
    throw InputError("a state of format version " + std::to_string(out.format) +
                     ", this library reads 1 to " + std::to_string(kStreamFormatExact) +
                     " (a newer lstmlm wrote it: upgrade, or re-create the state)");
  if (out.format >= 2) {
    out.fingerprint = r.value<uint64_t>("the model's fingerprint");
    out.stream.fed = r.value<int64_t>("the count of tokens fed");
    if (out.stream.fed < 0)
      throw InputError("a count of tokens fed of " + std::to_string(out.stream.fed) + ": not a count");
  }
  const auto layers = r.value<uint32_t>("the layer count");
  const auto next = r.value<uint32_t>("the vocabulary size");
  if (layers == 0 || layers > uint32_t(kMaxLayerCount))
    throw InputError("a state of " + std::to_string(layers) + " layers: not in [1, " +
                     std::to_string(kMaxLayerCount) + "]");
  std::vector<std::pair<uint32_t, uint32_t>> widths(layers);
  for (auto& [h, c] : widths) {
    h = r.value<uint32_t>("the layer widths");
    c = r.value<uint32_t>("the layer widths");
  }
  for (uint32_t l = 0; l < layers; ++l) {
    out.stream.state.h.push_back(r.array<float>(widths[l].first, "an h vector"));
    check_finite(out.stream.state.h.back(), "h[" + std::to_string(l) + "]", false);
  }
  for (uint32_t l = 0; l < layers; ++l) {
    out.stream.state.c.push_back(r.array<float>(widths[l].second, "a c vector"));
    check_finite(out.stream.state.c.back(), "c[" + std::to_string(l) + "]", false);
  }
  out.stream.next = r.array<float>(next, "the next distribution");
  check_finite(out.stream.next, "next", true);
  if (out.format == kStreamFormatExact) {
    State& st = out.stream.state;
    const auto h64 = r.value<uint32_t>("the double layer count");
    const auto c64 = r.value<uint32_t>("the double layer count");
    if (h64 != layers || c64 != layers)
      throw InputError("a double-precision state of " + std::to_string(h64) + " and " + std::to_string(c64) +
                       " layers, its float state " + std::to_string(layers));
    std::vector<uint32_t> w64(2 * size_t{layers});
    for (auto& w : w64) w = r.value<uint32_t>("the double layer widths");
    for (uint32_t l = 0; l < 2 * layers; ++l) {
      auto v = r.array<double>(w64[l], "a double h or c vector");
      for (double x : v)
        if (!std::isfinite(x))
          throw InputError(
              "the bytes hold a non-finite value in a double h or c vector: not a state this "
              "library wrote");
      (l < layers ? st.h64 : st.c64).push_back(std::move(v));
    }
    const auto n = r.value<uint32_t>("the history length");
    if (n > kMaxStreamHistory)
      throw InputError("a history of " + std::to_string(n) + " inputs, more than " +
                       std::to_string(kMaxStreamHistory));
    st.history = r.array<int32_t>(n, "the history");
  }
  if (r.left() != 0)
    throw InputError(std::to_string(bytes.size()) + " bytes, the state ends after " +
                     std::to_string(r.read()) + " (bytes left over)");
  return out;
}

void check_stream(const Model& model, const StreamBytes& s) {
  check_stream(model, s.stream, s.format >= 2 ? s.fingerprint : 0);
  // Format 1 always carried the distribution; format 2 may carry none (a stream with no context yet).
  if (s.format == 1 && s.stream.next.empty())
    throw InputError("a state of another shape: format 1 without a next distribution");
}

void check_stream(const Model& model, const Stream& s, uint64_t fingerprint) {
  if (fingerprint != 0 && fingerprint != model.fingerprint())
    throw InputError(
        "a state of another model (its fingerprint differs from this model's): a state continues "
        "only on the model that wrote it");
  const State zeros = State::zeros(model);
  const State& st = s.state;
  if (st.h.size() != zeros.h.size())
    throw InputError("a state of another shape: L = " + std::to_string(st.h.size()) + ", this model has " +
                     std::to_string(zeros.h.size()) + " layers");
  for (size_t l = 0; l < zeros.h.size(); ++l)
    for (const auto& [got, want, what] : {std::tuple{st.h[l].size(), zeros.h[l].size(), "h"},
                                          std::tuple{st.c[l].size(), zeros.c[l].size(), "c"}})
      if (got != want)
        throw InputError("a state of another shape: layer " + std::to_string(l) + "'s " + what + " has " +
                         std::to_string(got) + " floats, this model's " + std::to_string(want));
  const size_t V = static_cast<size_t>(model.vocab_size());
  if ((st.h64.empty() && st.history.empty()) != (zeros.h64.empty() && zeros.history.empty()))
    throw InputError(std::string("a state of another shape: ") +
                     (zeros.h64.empty() ? "a double-precision state, this model runs in float"
                                        : "a float state, this model runs on the double-precision path"));
  for (size_t l = 0; l < zeros.h64.size(); ++l)
    if (st.h64.size() != zeros.h64.size() || st.c64.size() != zeros.c64.size() ||
        st.h64[l].size() != zeros.h64[l].size() || st.c64[l].size() != zeros.c64[l].size())
      throw InputError("a state of another shape: its double h and c differ from this model's");
  if (st.history.size() != zeros.history.size())
    throw InputError("a state of another shape: a history of " + std::to_string(st.history.size()) +
                     " inputs, this model's direct connections read " + std::to_string(zeros.history.size()));
  for (int32_t id : st.history)
    if (id < -1 || id >= static_cast<int32_t>(V))
      throw InputError("a state of another shape: a history id " + std::to_string(id) + " outside [-1, " +
                       std::to_string(V) + ")");
  // A stream may carry no distribution (no context yet); one it carries is over the vocabulary.
  if (!s.next.empty() && s.next.size() != V)
    throw InputError("a state of another shape: a next distribution over " + std::to_string(s.next.size()) +
                     " tokens, this model's vocabulary has " + std::to_string(V));
}

Stream stream_from_bytes(const Model& model, std::string_view bytes) {
  StreamBytes s = read_stream_bytes(bytes);
  check_stream(model, s);
  return std::move(s.stream);
}

}  // namespace lstmlm::tasks
