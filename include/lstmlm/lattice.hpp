// Word lattices as speech recognizers write them (docs/rescoring.md): Kaldi text archives (CompactLattice
// and Lattice, `lattice-copy ark:- ark,t:-`, gzip too) and HTK SLF (gzip too), read into one type, an
// acyclic word graph whose arcs carry named scores, and written back in either form.
// Every bad input is an InputError "FILE:LINE: lattice 'KEY': ..." (one line), found while reading.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace lstmlm {

enum class LatticeFormat { Kaldi, Slf };

// Bounds on one lattice: beyond them the reader refuses it (an InputError), so memory stays bounded.
// A lattice arc takes about 150 bytes once read: the default bound keeps one lattice under about 300 MB (a
// recognizer's lattices have thousands of arcs; a 1 GB file is refused at its 2,097,153rd arc).
inline constexpr int64_t kMaxLatticeStates = int64_t{1} << 21;
inline constexpr int64_t kMaxLatticeArcs = int64_t{1} << 21;

// Kaldi's words.txt: "WORD ID" per line. Id 0 is epsilon.
class SymbolTable {
 public:
  // Throws InputError "FILE:LINE: ..." for a line that is not "WORD ID", an id or word given twice.
  static std::shared_ptr<const SymbolTable> load(const std::string& path);
  const std::string* word(int64_t id) const;  // null when the table has no such id
  std::optional<int64_t> id(const std::string& word) const;
  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }  // one past the highest id

 private:
  std::string path_;
  std::unordered_map<int64_t, std::string> words_;
  std::unordered_map<std::string, int64_t> ids_;
  int64_t size_ = 0;
};

struct LatticeArc {
  int32_t from = 0, to = 0;
  std::string word;            // as written (Kaldi: the symbol of its id; SLF: W=)
  bool epsilon = false;        // no word for the LM: Kaldi id 0, SLF !NULL, !ENTER, !EXIT, <s>, </s>
  std::vector<double> scores;  // one per Lattice::score_names
  std::string extra;           // Kaldi: the transition ids ("1_2_3"), written back unchanged
  uint64_t line = 0;           // of its source, for messages
};

struct LatticeFinal {
  int32_t state = 0;
  std::vector<double> scores;  // Kaldi's final weight; zeros for SLF's end node
  uint64_t line = 0;
};

struct Lattice {
  LatticeFormat format = LatticeFormat::Kaldi;
  std::string source, key;  // the file ("-": stdin) and the key (Kaldi) or UTTERANCE (SLF)
  uint64_t line = 0;        // where it starts
  // Kaldi: graph and acoustic, costs (-ln) as written. SLF: acoustic and lm (and pron for r=), log-probs in
  // natural log whatever the file's base=.
  std::vector<std::string> score_names;
  int32_t states = 0, start = 0;
  std::vector<LatticeArc> arcs;
  std::vector<LatticeFinal> finals;
  std::vector<double> times;  // SLF t= per node, when the file gives them (empty otherwise)
  // SLF header fields other than those the reader turns into the structure (lmscale, wdpenalty, ...).
  std::vector<std::pair<std::string, std::string>> header;
};

struct LatticeReadOptions {
  std::optional<LatticeFormat> format;         // none: from the content (looks_like_slf)
  std::shared_ptr<const SymbolTable> symbols;  // needed for Kaldi (word ids); optional for SLF
  int64_t max_arcs = kMaxLatticeArcs;          // a lattice with more arcs (or SLF links) is refused
};

// True when the first line of `text` that is not blank or a '#' comment holds an SLF header field.
bool looks_like_slf(const std::string& first_lines);
// The form of the lattices in a file, from its first lines (gzip read through): SLF by its header, Kaldi
// text by a key line followed by an arc or final-state line; nullopt for anything else (an n-best list, a
// file that cannot be read).
std::optional<LatticeFormat> detect_lattice(const std::string& path);

// Reads the lattices of one file one by one (a Kaldi archive holds many; an SLF file one).
class LatticeReader {
 public:
  // `path` "-" is stdin. Throws InputError when it cannot be opened.
  LatticeReader(const std::string& path, LatticeReadOptions opt);
  ~LatticeReader();
  LatticeReader(const LatticeReader&) = delete;
  LatticeReader& operator=(const LatticeReader&) = delete;
  // The next lattice, checked (check_lattice); false at the end of the file.
  bool next(Lattice& out);
  LatticeFormat format() const;
  uint64_t bytes_done() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The states in an order where every arc goes forward. Throws InputError naming the lattice, the line
// and the states for a cycle, a state the start does not reach, a state from which no final state is
// reached (Kaldi's "not all states co-accessible"), or a lattice without a final state.
std::vector<int32_t> check_lattice(const Lattice& l);

// Writes `l` in Kaldi text (CompactLattice, "KEY\n...arcs...\n\n") or SLF; scores are converted between
// the forms (Kaldi graph cost = -SLF lm, acoustic cost = -SLF acoustic). Kaldi needs `symbols` for the word
// ids: a word it lacks is an InputError naming the lattice.
std::string write_kaldi_lattice(const Lattice& l, const SymbolTable& symbols);
std::string write_slf_lattice(const Lattice& l);

// The lattice's scores in the other form's names and signs (used by the writers; a lattice already in
// `to` comes back unchanged).
Lattice convert_lattice(const Lattice& l, LatticeFormat to);

}  // namespace lstmlm
