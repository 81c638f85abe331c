#include <memory>

#include "lattice/lines.hpp"
#include "lattice/parse.hpp"
#include "lstmlm/error.hpp"
#include "lstmlm/lattice.hpp"

namespace lstmlm {

bool looks_like_slf(const std::string& first_lines) {
  size_t at = 0;
  while (at < first_lines.size()) {
    size_t nl = first_lines.find('\n', at);
    if (nl == std::string::npos) nl = first_lines.size();
    const std::string_view line = lattice::trim_blanks(std::string_view(first_lines).substr(at, nl - at));
    at = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    for (const char* f :
         {"VERSION=", "V=", "UTTERANCE=", "U=", "N=", "NODES=", "base=", "lmscale=", "SUBLAT="})
      if (line.starts_with(f)) return true;
    return false;
  }
  return false;
}

namespace {

// "0 1 13 87.29,2434.05," (an arc) or "21 13.83,4651.0," (a final state): numbers, commas and '_' only.
bool kaldi_arc_line(std::string_view line) {
  const auto f = lattice::split_blanks(line);
  if (f.empty() || f.size() > 5) return false;
  if (f[0].find_first_not_of("0123456789") != std::string_view::npos) return false;
  for (auto x : f)
    if (x.find_first_not_of("0123456789.,_eE+-") != std::string_view::npos) return false;
  return true;
}

}  // namespace

std::optional<LatticeFormat> detect_lattice(const std::string& path) {
  std::string head;
  std::string_view line;
  try {
    lattice::Lines in(path);
    int content = 0;
    for (int i = 0; i < 50 && content < 2 && in.next(line); ++i) {
      head += std::string(line) + "\n";
      if (lattice::trim_blanks(line).empty()) continue;
      if (++content == 2 && !looks_like_slf(head))
        return kaldi_arc_line(line) ? std::optional(LatticeFormat::Kaldi) : std::nullopt;
    }
  } catch (const InputError&) {
    return std::nullopt;  // not a lattice (a line too long, a NUL byte): the n-best reader says why
  }
  if (looks_like_slf(head)) return LatticeFormat::Slf;
  return std::nullopt;
}

struct LatticeReader::Impl {
  explicit Impl(const std::string& path) : lines(path) {}
  lattice::Lines lines;
  LatticeReadOptions opt;
  LatticeFormat format = LatticeFormat::Kaldi;
};

LatticeReader::LatticeReader(const std::string& path, LatticeReadOptions opt)
    : impl_(std::make_unique<Impl>(path)) {
  impl_->opt = std::move(opt);
  if (impl_->opt.format) {
    impl_->format = *impl_->opt.format;
  } else if (path != "-") {  // stdin cannot be read twice: Kaldi unless the format is given
    lattice::Lines probe(path);
    std::string_view line;
    std::string head;
    for (int i = 0; i < 50 && probe.next(line); ++i) head += std::string(line) + "\n";
    impl_->format = looks_like_slf(head) ? LatticeFormat::Slf : LatticeFormat::Kaldi;
  }
}

LatticeReader::~LatticeReader() = default;

bool LatticeReader::next(Lattice& out) {
  const bool got =
      impl_->format == LatticeFormat::Slf
          ? lattice::read_slf(impl_->lines, impl_->opt.max_arcs, out)
          : lattice::read_kaldi(impl_->lines, impl_->opt.symbols.get(), impl_->opt.max_arcs, out);
  if (got) check_lattice(out);
  return got;
}

LatticeFormat LatticeReader::format() const { return impl_->format; }
uint64_t LatticeReader::bytes_done() const { return impl_->lines.bytes(); }

}  // namespace lstmlm
