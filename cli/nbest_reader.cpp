#include "nbest_reader.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "lstmlm/error.hpp"
#include "lstmlm/tasks/nbest.hpp"

namespace lstmlm::cli {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// Whitespace-separated fields (blank = space or tab, as Kaldi's text files).
std::vector<std::string_view> split_blanks(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_blank(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !is_blank(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string shown(std::string_view s) {
  std::string v(s.substr(0, 60));
  for (char& c : v)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  return "'" + v + (s.size() > 60 ? "...'" : "'");
}

// A finite decimal number, the whole of `s`.
bool parse_number(std::string_view s, double& v) {
  if (s.empty() || s.size() > 64) return false;
  std::string t(s);
  char* end = nullptr;
  errno = 0;
  v = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && errno == 0 && std::isfinite(v);
}

// "UTT-N": the utterance and N (digits after the last '-').
bool split_kaldi_id(std::string_view id, std::string& utt, int64_t& n) {
  size_t dash = id.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size() || id.size() - dash > 10)
    return false;
  n = 0;
  for (size_t i = dash + 1; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9') return false;
    n = n * 10 + (id[i] - '0');
  }
  utt = std::string(id.substr(0, dash));
  return true;
}

}  // namespace

NbestReader::NbestReader(std::vector<std::string> files, NbestFormat format,
                         std::vector<ScoreFile> score_files)
    : files_(std::move(files)), requested_(format), score_files_(std::move(score_files)) {
  if (files_.empty()) files_.push_back("-");
  // The score files are read whole first: their ids are looked up as the hypotheses stream by.
  for (const auto& sf : score_files_) {
    LineReader r({sf.path});
    r.next_file();
    std::unordered_map<std::string, double> values;
    std::string line;
    while (r.next(line)) {
      const std::string at = sf.path + ":" + std::to_string(r.line_number()) + ": ";
      auto f = split_blanks(line);
      double v = 0;
      if (f.size() != 2)
        throw InputError(at + "a scores line is 'UTT-N VALUE' (2 fields), this one has " +
                         std::to_string(f.size()));
      if (!parse_number(f[1], v)) throw InputError(at + shown(f[1]) + " is not a finite number");
      if (!values.emplace(std::string(f[0]), v).second)
        throw InputError(at + "hypothesis " + shown(f[0]) + " has a second value");
    }
    file_scores_.push_back(std::move(values));
    used_.emplace_back();
    names_.push_back(sf.name);
  }
}

std::string NbestReader::where() const { return source_ + ":" + std::to_string(line_) + ": "; }

bool NbestReader::open_next() {
  if (!in_) in_ = std::make_unique<LineReader>(files_);
  if (!in_->next_file()) return false;
  source_ = in_->source();
  const std::string& path = files_[next_file_++];
  format_ = requested_;
  if (format_ == NbestFormat::Auto) {
    auto ends = [&](std::string_view e) { return path.size() >= e.size() && path.ends_with(e); };
    format_ = ends(".tsv")                      ? NbestFormat::Tsv
              : ends(".jsonl") || ends(".json") ? NbestFormat::Jsonl
                                                : NbestFormat::Kaldi;
  }
  if (!score_files_.empty() && format_ != NbestFormat::Kaldi)
    throw UsageError("--scores: score files go with Kaldi n-best text; " + path +
                     " is read as tsv/jsonl, whose scores are its own columns or fields");
  header_read_ = false;
  done_.clear();
  current_.clear();
  line_ = 0;
  return true;
}

const std::vector<std::string>& NbestReader::score_names() {
  if (names_known_) return names_;
  if (!in_ && !open_next()) {
    names_known_ = true;
    return names_;
  }
  // tsv: the header; jsonl: the first record (kept for next_block).
  if (format_ != NbestFormat::Kaldi) {
    tasks::Hypothesis h;
    if (read_one(h)) {
      ahead_ = std::move(h);
      have_ahead_ = true;
    }
  }
  names_known_ = true;
  return names_;
}

void NbestReader::read_tsv_header(const std::string& line) {
  std::vector<std::string> cols;
  size_t b = 0;
  for (;;) {
    size_t e = line.find('\t', b);
    cols.emplace_back(line.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  std::vector<std::string> names;
  std::vector<int> score_cols;
  int utt = -1, hyp = -1, id = -1, rec = -1;
  std::unordered_set<std::string_view> seen;  // linear in the header's length, however many columns
  for (size_t c = 0; c < cols.size(); ++c) {
    const std::string& n = cols[c];
    int* known = n == "utt" ? &utt : n == "hyp" ? &hyp : n == "id" ? &id : n == "recording" ? &rec : nullptr;
    if (n.empty()) throw InputError(where() + "tsv header: column " + std::to_string(c + 1) + " has no name");
    if (!seen.insert(n).second)
      throw InputError(where() + "tsv header: column " + shown(n) + " appears twice");
    if (known) {
      *known = int(c);
    } else {
      names.push_back(n);
      score_cols.push_back(int(c));
    }
  }
  if (utt < 0 || hyp < 0)
    throw InputError(where() + "tsv header: the columns 'utt' and 'hyp' are required (found: " + shown(line) +
                     ")");
  if (names_known_ && names != names_)
    throw InputError(where() + "tsv header: the score columns differ from the first file's");
  names_ = names;
  col_utt_ = utt, col_hyp_ = hyp, col_id_ = id, col_rec_ = rec;
  col_scores_ = score_cols;
  columns_ = cols.size();
  header_read_ = true;
}

void NbestReader::parse_kaldi(const std::string& line, tasks::Hypothesis& h) {
  size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  size_t j = i;
  while (j < line.size() && !is_blank(line[j])) ++j;
  if (j == i)
    throw InputError(where() +
                     "a line without a hypothesis id (Kaldi n-best lines are 'UTT-N word ...'; an "
                     "empty hypothesis is 'UTT-N' alone)");
  std::string_view id(line.data() + i, j - i);
  if (!split_kaldi_id(id, h.utt, h.n))
    throw InputError(where() + "hypothesis id " + shown(id) +
                     " is not UTT-N (N the hypothesis number after the last '-'); is the id missing?");
  h.id = std::string(id);
  while (j < line.size() && is_blank(line[j])) ++j;
  h.text = line.substr(j);
  for (size_t k = 0; k < score_files_.size(); ++k) {
    auto it = file_scores_[k].find(h.id);
    if (it == file_scores_[k].end())
      throw InputError(where() + "hypothesis " + shown(h.id) + " has no value in " + score_files_[k].path +
                       " (--scores " + score_files_[k].name + ")");
    h.scores.push_back({it->second});
    used_[k].insert(h.id);
  }
}

void NbestReader::parse_tsv(const std::string& line, tasks::Hypothesis& h) {
  std::vector<std::string_view> cells;
  size_t b = 0;
  for (;;) {
    size_t e = line.find('\t', b);
    cells.emplace_back(std::string_view(line).substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  if (cells.size() != columns_)
    throw InputError(where() + "a tsv row has " + std::to_string(cells.size()) + " cells, the header " +
                     std::to_string(columns_));
  h.utt = std::string(cells[size_t(col_utt_)]);
  if (h.utt.empty())
    throw InputError(where() + "the 'utt' cell is empty: every hypothesis needs its utterance id");
  h.text = std::string(cells[size_t(col_hyp_)]);
  if (col_id_ >= 0) h.id = std::string(cells[size_t(col_id_)]);
  if (col_rec_ >= 0) h.recording = std::string(cells[size_t(col_rec_)]);
  for (size_t k = 0; k < col_scores_.size(); ++k) {
    std::vector<double> vals;
    for (auto f : split_blanks(cells[size_t(col_scores_[k])])) {
      double v = 0;
      if (!parse_number(f, v))
        throw InputError(where() + "column " + shown(names_[k]) + ": " + shown(f) +
                         " is not a finite number");
      vals.push_back(v);
    }
    if (vals.empty()) throw InputError(where() + "column " + shown(names_[k]) + " is empty");
    h.scores.push_back(std::move(vals));
  }
}

void NbestReader::parse_jsonl(const std::string& line, tasks::Hypothesis& h) {
  std::optional<std::vector<std::string>> names;
  if (names_known_) names = names_;
  tasks::parse_jsonl_hypothesis(line, names, where(), h);
  if (!names_known_) names_ = *names;
}

bool NbestReader::read_one(tasks::Hypothesis& h) {
  std::string line;
  for (;;) {
    if (!in_->next(line)) return false;
    line_ = in_->line_number();
    if (format_ == NbestFormat::Tsv && !header_read_) {
      read_tsv_header(line);
      continue;
    }
    break;
  }
  h = tasks::Hypothesis{};
  h.line = line_;
  if (format_ == NbestFormat::Kaldi)
    parse_kaldi(line, h);
  else if (format_ == NbestFormat::Tsv)
    parse_tsv(line, h);
  else
    parse_jsonl(line, h);
  h.recording = source_ + '\n' + h.recording;  // a new file is a new conversation
  return true;
}

bool NbestReader::next_block(std::vector<tasks::Hypothesis>& out, size_t min) {
  out.clear();
  if (pending_) std::rethrow_exception(std::exchange(pending_, nullptr));
  if (!in_ && !open_next()) return false;
  for (;;) {
    tasks::Hypothesis h;
    bool got = false;
    if (have_ahead_) {
      h = std::move(ahead_);
      have_ahead_ = false;
      got = true;
    } else {
      try {
        got = read_one(h);
      } catch (...) {
        // The complete utterances before the bad line are returned first (nothing before it is lost);
        // the one it interrupts cannot have a best, so it goes; the error comes with the next call.
        while (!out.empty() && out.back().utt == current_) out.pop_back();
        if (out.empty()) throw;
        pending_ = std::current_exception();
        return true;
      }
    }
    if (!got) {
      if (!out.empty()) return true;  // a block never spans two files
      if (!open_next()) return false;
      continue;
    }
    if (out.empty() || h.utt != current_) {
      if (h.utt != current_) {
        if (done_.count(h.utt)) {
          InputError e(where() + "utterance " + shown(h.utt) +
                       " appears again after other utterances: the hypotheses of an utterance must be "
                       "contiguous (sort the list by utterance, keeping the order within each)");
          if (out.empty()) throw e;
          pending_ = std::make_exception_ptr(e);  // the utterances before it are complete: written first
          return true;
        }
        if (!out.empty() && out.size() >= min) {
          ahead_ = std::move(h);
          have_ahead_ = true;
          return true;
        }
        if (!current_.empty()) done_.insert(current_);
        current_ = h.utt;
        count_ = 0;
      }
    }
    const int64_t n = ++count_;
    if (size_t(n) > kMaxHypothesesPerUtterance)
      throw InputError(where() + "utterance " + shown(h.utt) + " has more than " +
                       std::to_string(kMaxHypothesesPerUtterance) + " hypotheses");
    if (format_ != NbestFormat::Kaldi) h.n = n;
    if (h.id.empty()) h.id = h.utt + "-" + std::to_string(h.n);
    out.push_back(std::move(h));
  }
}

std::string NbestReader::unused_scores() const {
  for (size_t k = 0; k < score_files_.size(); ++k) {
    if (used_[k].size() == file_scores_[k].size()) continue;
    std::string first;
    for (const auto& [id, v] : file_scores_[k])
      if (!used_[k].count(id) && (first.empty() || id < first)) first = id;
    return score_files_[k].path + ": " + std::to_string(file_scores_[k].size() - used_[k].size()) +
           " ids match no hypothesis (the first: " + shown(first) +
           "); is it the scores file of this n-best list?";
  }
  return "";
}

}  // namespace lstmlm::cli
