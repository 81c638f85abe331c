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

 private:
  ModelError(std::string file, std::string field, std::string message, bool field_prefix)
      : std::runtime_error(compose(file, field, message, field_prefix)),
        file_(std::move(file)),
        field_(std::move(field)),
        message_(std::move(message)) {}
  static std::string compose(const std::string& file, const std::string& field, const std::string& message,
                             bool field_prefix) {
    std::string s = file.empty() ? std::string() : file + ": ";
    if (field_prefix) s += "field '" + field + "': ";
    return s + message;
  }
  std::string file_, field_, message_;
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

// A request the library cannot serve as asked (bad shape, bad option value).
class UsageError : public TextError {
 public:
  using TextError::TextError;
};

// Writing the output failed (full disk, I/O error). A closed pipe is handled by the CLI itself.
class OutputError : public TextError {
 public:
  using TextError::TextError;
};

}  // namespace lstmlm
