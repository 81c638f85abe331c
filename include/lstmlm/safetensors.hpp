// Strict reader of the safetensors container (https://github.com/huggingface/safetensors).
// Every size, offset and overlap is checked before any tensor byte is trusted.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lstmlm {

// F64 (format v5) is rounded to float32 for every path; the double-precision path keeps its values.
enum class DType { F32, F16, BF16, F64 };

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range relative to the start of the data section
};

class SafetensorsFile {
 public:
  // Reads and validates the header; throws ModelError naming `path` and the offending field.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;
  // The tensor's data widened to float32, in row-major order.
  std::vector<float> read_f32(const TensorInfo& t) const;
  // The same into caller storage of element_count(t) floats (no intermediate buffer).
  void read_f32(const TensorInfo& t, float* out) const;
  // Elements [first, first + count) of it, widened as read_f32 does: a block of rows, read as it is needed.
  void read_f32(const TensorInfo& t, size_t first, size_t count, float* out) const;
  // The tensor's data as double (an F64 tensor's own values, any other dtype widened exactly).
  void read_f64(const TensorInfo& t, double* out) const;
  static size_t element_count(const TensorInfo& t);

 private:
  std::string path_;
  std::vector<TensorInfo> tensors_;
  std::shared_ptr<const int> fd_;  // the open file (closed with the last copy)
  uint64_t data_offset_ = 0;       // where the data section starts in the file
  uint64_t data_size_ = 0;
};

// Writes tensors (all F32) in the safetensors layout; used by tests and tools.
struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors);

}  // namespace lstmlm
