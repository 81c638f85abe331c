// Error types thrown by the library. Only the CLI turns them into messages and exit codes.
#pragma once
#include <stdexcept>
#include <string>

namespace lstmlm {

// A model directory (config.json, vocab.json, weights.safetensors) that cannot be used.
// The message names the file and the field and says what was expected.
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input: text that cannot be tokenized, an OOV word under --oov error, invalid UTF-8, ...
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A request the library cannot serve as asked (bad shape, bad option value).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writing the output failed (full disk, I/O error). A closed pipe is handled by the CLI itself.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lstmlm
