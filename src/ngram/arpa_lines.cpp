#include "ngram/arpa_lines.hpp"

#include "lstmlm/error.hpp"

namespace lstmlm::ngram {

LineSource::LineSource(const std::string& path) : path_(path) {
  try {
    lines_ = std::make_unique<format::TextLines>(path, kMaxArpaLineBytes, "an ARPA text file");
  } catch (const InputError& e) {
    // "PATH: cannot open: ..." as the model file's error
    const std::string& m = e.message();
    throw ModelError(path, m.compare(0, path.size() + 2, path + ": ") == 0 ? m.substr(path.size() + 2) : m);
  }
}

bool LineSource::next(std::string_view& line) {
  try {
    return lines_->next(line);
  } catch (const InputError& e) {
    throw ModelError(path_, "line " + std::to_string(e.line()) + ": " + e.detail());
  }
}

}  // namespace lstmlm::ngram
