// Error types thrown by the library. Only the CLI turns them into messages and exit codes.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace lstmlm {

// A model directory (config.json, vocab.json, weights.safetensors) that cannot be used.
// Carries the file at fault, the field or tensor (when there is one) and the message as data;
// what() is the one-line text composed from them:
//   ModelError(file, message)                    "<file>: <message>"
//   ModelError::in_field(file, field, message)   "<file>: field '<field>': <message>"  (a config.json field)
//   ModelError::about(file, item, message)       "<file>: <message>", the message names `item` itself
//                                                ("tensor 'decoder.bias' has shape ...", "unknown field ...")
class ModelError : public std::runtime_error {
 public:
  // A problem not tied to a file (e.g. a model's output at run time): what() is `message`.
  explicit ModelError(const std::string& message) : ModelError({}, {}, message, false) {}
  ModelError(std::string file, std::string message)
      : ModelError(std::move(file), {}, std::move(message), false) {}
  static ModelError in_field(std::string file, std::string field, std::string message) {
    return ModelError(std::move(file), std::move(field), std::move(message), true);
  }
  static ModelError about(std::string file, std::string item, std::string message) {
    return ModelError(std::move(file), std::move(item), std::move(message), false);
  }

  const std::string& file() const noexcept { return file_; }    // "" when no file is at fault
  const std::string& field() const noexcept { return field_; }  // field or tensor name, "" for the whole file
  const std::string& message() const noexcept { return message_; }  // the text after "<file>: [field 'x': ]"
  // what() as a std::string: whole, where what() (a C string) ends at a NUL a file name may hold.
  const std::string& text() const noexcept { return text_; }

 private:
  ModelError(std::string file, std::string field, std::string message, bool field_prefix)
      : std::runtime_error(compose(file, field, message, field_prefix)),
        file_(std::move(file)),
        field_(std::move(field)),
        message_(std::move(message)),
        text_(compose(file_, field_, message_, field_prefix)) {}
  static std::string compose(const std::string& file, const std::string& field, const std::string& message,
                             bool field_prefix) {
    std::string s = file.empty() ? std::string() : file + ": ";
    if (field_prefix) s += "field '" + field + "': ";
    return s + message;
  }
  std::string file_, field_, message_, text_;
};

// The base of the errors below: message() is the whole text as a std::string, which what() (a C string)
// cuts at a NUL that a word or a file name of the input may hold.
class TextError : public std::runtime_error {
 public:
  explicit TextError(const std::string& message) : std::runtime_error(message), message_(message) {}
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
};

// Bad user input: text that cannot be tokenized, an OOV word under --oov error, invalid UTF-8, ... When the
// place is known, the source (a file name, "-" for stdin) and its 1-based line are data too, and the message
// is "<source>:<line>: <detail>".
class InputError : public TextError {
 public:
  explicit InputError(const std::string& message) : TextError(message), detail_(message) {}
  InputError(std::string source, uint64_t line, std::string detail)
      : TextError(source + ":" + std::to_string(line) + ": " + detail),
        source_(std::move(source)),
        line_(line),
        detail_(std::move(detail)) {}

  const std::string& source() const noexcept { return source_; }  // "" when no place is known
  uint64_t line() const noexcept { return line_; }                // 0 when no place is known
  const std::string& detail() const noexcept { return detail_; }  // the message without its place

 private:
  std::string source_;
  uint64_t line_ = 0;
  std::string detail_;
};

// Input past a bound its caller set on the whole request (the server's --max-tokens: TokenBudget in
// lstmlm/tasks/input.hpp): the server answers it with 413, the CLI as any input error.
class LimitError : public InputError {
 public:
  using InputError::InputError;
};

// A request the library cannot serve as asked (bad shape, bad option value). An option's error carries the
// option's key as data (the library's name, snake_case: "top_p", "aggregate") and the detail that follows
// it, in which another option is written as ref(key) ("not defined with " + ref("aggregate") + " words");
// message() spells the keys as the CLI does ("--rank: not defined with --aggregate words"), and each front
// end renders its own spelling with spelled() (the server "field 'aggregate'", Python "aggregate").
class UsageError : public TextError {
 public:
  using TextError::TextError;
  // `detail` starts where the option's name ends: " must be in [1, 8], got 9", ": not defined with ...".
  static UsageError option(const std::string& key, const std::string& detail) {
    UsageError e(cli_spelling(key) + render(detail, cli_spelling));
    e.key_ = key;
    e.detail_ = detail;
    return e;
  }
  const std::string& key() const noexcept { return key_; }  // "" when the error names no option
  // The message with every option key as `spell(key)` writes it; message() when no option is named.
  template <class Spell>
  std::string spelled(Spell&& spell) const {
    return key_.empty() ? message() : spell(key_) + render(detail_, spell);
  }
  // Another option named inside a detail: the key between two US bytes (0x1f), which no quoted input
  // carries (the escapers write control bytes as \xNN or \u001f).
  static std::string ref(const std::string& key) { return "\x1f" + key + "\x1f"; }
  // "--top-p" for "top_p".
  static std::string cli_spelling(std::string key) {
    for (char& c : key)
      if (c == '_') c = '-';
    return "--" + key;
  }

 private:
  template <class Spell>
  static std::string render(const std::string& detail, Spell&& spell) {
    std::string out;
    for (size_t i = 0; i < detail.size(); ++i) {
      const size_t close = detail[i] == '\x1f' ? detail.find('\x1f', i + 1) : std::string::npos;
      if (close != std::string::npos) {
        out += spell(detail.substr(i + 1, close - i - 1));
        i = close;
      } else {
        out += detail[i];
      }
    }
    return out;
  }
  std::string key_, detail_;
};

// Writing the output failed (full disk, I/O error). A closed pipe is handled by the CLI itself.
class OutputError : public TextError {
 public:
  using TextError::TextError;
};

}  // namespace lstmlm
