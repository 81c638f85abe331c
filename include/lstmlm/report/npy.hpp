// numpy's .npy format (version 1.0): the header of a C-order float32 array, for files written in blocks
// whose row count is known only at the end (`lstmlm states`).
#pragma once
#include <cstddef>
#include <string>

namespace lstmlm::report {

// The header of a little-endian float32 [rows, cols] array in C order: the magic, version 1.0 and the
// dictionary, padded with spaces to kNpyHeaderBytes so that the data starts 64-byte aligned and a header
// rewritten with the final row count has the same length.
constexpr size_t kNpyHeaderBytes = 128;
std::string npy_header(size_t rows, size_t cols);

}  // namespace lstmlm::report
