#include "lstmlm/report/npy.hpp"

#include <stdexcept>

namespace lstmlm::report {

std::string npy_header(size_t rows, size_t cols) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "), }";
  const size_t fixed = 10;  // magic (6), version (2), header length (2)
  if (fixed + dict.size() + 1 > kNpyHeaderBytes) throw std::length_error("npy_header: shape too long");
  dict.append(kNpyHeaderBytes - fixed - dict.size() - 1, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const size_t len = dict.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  return out + dict;
}

}  // namespace lstmlm::report
