// Reads n-best lists for `lstmlm rescore` (docs/rescoring.md) in the forms toolkits write:
//   kaldi: "UTT-N w1 w2 ..." per line (nbest-to-linear, lattice-to-nbest pipelines), with optional score
//          files "UTT-N value" (--scores NAME=FILE, each read whole up front);
//   tsv:   a header naming the columns utt, hyp (required), id, recording (optional), every other column
//          a numeric score (one number, or space-separated numbers: one per token);
//   jsonl: {"utt": ..., "hyp": ..., "id"?: ..., "recording"?: ..., "scores"?: {"name": number | [numbers]}}.
// A line without an id (an empty line, a Kaldi id without "-N") is an InputError naming the file and line,
// never a dropped word. The hypotheses of an utterance must be contiguous; utterances are returned whole.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "line_reader.hpp"
#include "lstmlm/tasks/rescore.hpp"

namespace lstmlm::cli {

enum class NbestFormat { Auto, Kaldi, Tsv, Jsonl };

// Hypotheses of one utterance held at once: more is an InputError (memory stays bounded).
inline constexpr size_t kMaxHypothesesPerUtterance = size_t{1} << 20;

struct ScoreFile {
  std::string name, path;
};

class NbestReader {
 public:
  NbestReader(std::vector<std::string> files, NbestFormat format, std::vector<ScoreFile> score_files);
  // The score names, in column order: the score files' (kaldi), the numeric columns (tsv) or the first
  // record's "scores" keys (jsonl). Reads the first file's header (or first record) when needed.
  const std::vector<std::string>& score_names();
  // Appends whole utterances to `out` (cleared first) until it holds at least `min` hypotheses or the
  // input ends; false when nothing was left. All hypotheses of out come from source(). At a bad line the
  // complete utterances before it are returned first and the error is thrown by the next call.
  bool next_block(std::vector<tasks::Hypothesis>& out, size_t min);
  const std::string& source() const { return source_; }
  // Bytes of the lists read so far (LineReader::bytes_done), for the progress line.
  uint64_t bytes_done() const { return in_ ? in_->bytes_done() : 0; }
  // Ids of the score files that matched no hypothesis, after the input ended: "FILE: N ids ... (the
  // first: ID)", or "" when every id was used.
  std::string unused_scores() const;

 private:
  bool open_next();
  bool read_one(tasks::Hypothesis& h);  // the next hypothesis of the current file
  void parse_kaldi(const std::string& line, tasks::Hypothesis& h);
  void parse_tsv(const std::string& line, tasks::Hypothesis& h);
  void parse_jsonl(const std::string& line, tasks::Hypothesis& h);
  void read_tsv_header(const std::string& line);
  std::string where() const;

  std::vector<std::string> files_;
  NbestFormat requested_, format_ = NbestFormat::Kaldi;
  std::vector<ScoreFile> score_files_;
  // Per score file: id -> value, and the ids used.
  std::vector<std::unordered_map<std::string, double>> file_scores_;
  std::vector<std::unordered_set<std::string>> used_;
  std::unique_ptr<LineReader> in_;
  size_t next_file_ = 0;
  std::string source_;
  uint64_t line_ = 0;
  bool names_known_ = false;
  std::vector<std::string> names_;
  // tsv: the column of utt, hyp, id, recording (-1: absent) and of each score.
  int col_utt_ = -1, col_hyp_ = -1, col_id_ = -1, col_rec_ = -1;
  std::vector<int> col_scores_;
  size_t columns_ = 0;
  bool header_read_ = false;
  // Utterances finished in the current file (an utterance seen again later is an error) and the one
  // being read; a hypothesis read ahead of the block that ends before it.
  std::unordered_set<std::string> done_;
  std::string current_;
  int64_t count_ = 0;  // hypotheses of current_ so far
  bool have_ahead_ = false;
  tasks::Hypothesis ahead_;
  std::exception_ptr pending_;  // a bad line found after the block was returned
};

}  // namespace lstmlm::cli
