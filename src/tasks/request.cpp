#include "lstmlm/tasks/request.hpp"

#include <nlohmann/json.hpp>

#include "lstmlm/text.hpp"

namespace lstmlm::tasks {

std::string quoted_word(std::string_view word) {
  const std::string cut(word.substr(0, 64));
  std::string q = nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (word.size() > cut.size()) q.insert(q.size() - 1, "...");
  return printable(q, 80);
}

const Choices<ContextMode>& context_choices() {
  static const Choices<ContextMode> c(
      "context", {{"sentence", ContextMode::Sentence}, {"document", ContextMode::Document}});
  return c;
}

const Choices<OovPolicy>& oov_choices() {
  static const Choices<OovPolicy> c("oov", {{"skip", OovPolicy::Skip}, {"error", OovPolicy::Error}});
  return c;
}

const Choices<Aggregate>& aggregate_choices() {
  static const Choices<Aggregate> c("aggregate",
                                    {{"tokens", Aggregate::Tokens}, {"words", Aggregate::Words}});
  return c;
}

const Choices<Units>& units_choices() {
  static const Choices<Units> c("units", {{"default", Units::Default},
                                          {"ln", Units::Ln},
                                          {"log10", Units::Log10},
                                          {"bits", Units::Bits},
                                          {"prob", Units::Prob}});
  return c;
}

const Choices<Normalization>& normalize_choices() {
  static const Choices<Normalization> c("normalize", {{"none", Normalization::None},
                                                      {"lower", Normalization::Lower},
                                                      {"nfkc", Normalization::Nfkc},
                                                      {"ccnet", Normalization::Ccnet}});
  return c;
}

const Choices<Softmax>& softmax_choices() {
  static const Choices<Softmax> c("softmax", {{"full", Softmax::Full}, {"skip", Softmax::Skip}});
  return c;
}

const Choices<MixMode>& mix_mode_choices() {
  static const Choices<MixMode> c("mix_mode",
                                  {{"linear", MixMode::Linear}, {"loglinear", MixMode::LogLinear}});
  return c;
}

const Choices<EmbeddingFold>& fold_choices() {
  static const Choices<EmbeddingFold> c(
      "fold_embedding",
      {{"auto", EmbeddingFold::Auto}, {"always", EmbeddingFold::Always}, {"never", EmbeddingFold::Never}});
  return c;
}

const Choices<Precision>& precision_choices() {
  static const Choices<Precision> c("precision", [] {
    std::vector<std::pair<std::string, Precision>> words;
    for (Precision p : kPrecisions) words.emplace_back(std::string(precision_name(p)), p);
    return words;
  }());
  return c;
}

const Choices<CellType>& cell_choices() {
  static const Choices<CellType> c("cell", [] {
    std::vector<std::pair<std::string, CellType>> words;
    for (CellType t : {CellType::Lstm, CellType::Gru, CellType::Rnn})
      words.emplace_back(cell_traits(t).name, t);
    return words;
  }());
  return c;
}

const Choices<bool>& rescore_context_choices() {
  static const Choices<bool> c("context", {{"utterance", false}, {"conversation", true}});
  return c;
}

const Choices<LogUnits>& ngram_units_choices() {
  static const Choices<LogUnits> c(
      "ngram_units", {{"log10", LogUnits::Log10}, {"ln", LogUnits::Ln}, {"cost", LogUnits::Cost}});
  return c;
}

WindowOptions default_window(const Model& model, std::optional<WindowOptions> given) {
  if (given) return *given;
  if (const auto& n = model.config().input_length) return {WindowMode::Pad, *n};
  return {};
}

void split_lines(std::string_view text, std::vector<std::string>& lines, std::vector<LineEnd>& ends,
                 bool strip_bom) {
  size_t pos = strip_bom && text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      lines.emplace_back(text.substr(pos));
      ends.push_back(LineEnd::None);
      break;
    }
    size_t end = nl;
    LineEnd how = LineEnd::Lf;
    if (end > pos && text[end - 1] == '\r') {
      --end;
      how = LineEnd::CrLf;
    }
    lines.emplace_back(text.substr(pos, end - pos));
    ends.push_back(how);
    pos = nl + 1;
  }
}

}  // namespace lstmlm::tasks
