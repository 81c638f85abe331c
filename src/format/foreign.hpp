// Recognises the files of other frameworks given where an lstmlm model directory was expected
// (`lstmlm ... -m model.h5`), so the error can say what the file is and what to do with it.
#pragma once
#include <optional>
#include <string>

namespace lstmlm::format {

struct ForeignModel {
  std::string what;          // "a Keras HDF5 file", "a TensorFlow SavedModel directory", ...
  std::string format;        // "Keras HDF5", "TensorFlow SavedModel", ...
  bool convertible = false;  // lstmlm-convert reads it
};

// What `path` is, when it is a model file or directory of a framework lstmlm knows of (Keras .h5/.keras,
// PyTorch .pt/.pth, TF1 checkpoint, TF2 SavedModel, ONNX, TF.js, ml5 char-rnn); nullopt otherwise. Never
// throws for an unreadable path, never opens anything but a regular file, reads at most a zip's central
// directory.
std::optional<ForeignModel> identify_foreign_model(const std::string& path);

}  // namespace lstmlm::format
