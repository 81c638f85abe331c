// Strict safetensors reader. Tensors are read with pread straight into the caller's storage (measured
// against mmap in docs/model-format.md); nothing in the header is trusted before it is checked against
// the file size.
#include "lstmlm/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include "format/json_util.hpp"
#include "lstmlm/error.hpp"

namespace lstmlm {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; add byte swapping");

namespace {

// Larger headers are not produced by any writer we know (a 100k-tensor model needs ~10 MB).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

size_t item_size(DType d) { return d == DType::F64 ? 8 : d == DType::F32 ? 4 : 2; }

const char* dtype_name(DType d) {
  switch (d) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::F64:
      return "F64";
  }
  return "?";
}

// IEEE half -> float, exact for every input (subnormals, infinities and NaN payloads included).
float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: value = man * 2^-24, exactly representable as a normal float.
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(bits);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw ModelError(path, what); }
// A problem of one tensor's header entry: the tensor's name is the error's field.
[[noreturn]] void fail(const std::string& path, const std::string& tensor, const std::string& what) {
  throw ModelError::about(path, tensor, what);
}

// A non-negative JSON integer that fits in uint64, or fail naming the field.
uint64_t get_u64(const nlohmann::json& j, const std::string& path, const std::string& field) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  fail(path, field + ": expected a non-negative integer, found " + format::brief(j));
}

// One tensor's header entry: dtype, shape and byte range checked against each other and the data section.
TensorInfo parse_entry(const std::string& path, const std::string& name, const nlohmann::json& t,
                       uint64_t data_size) {
  std::string where = "tensor " + format::quoted(name);
  if (!t.is_object()) fail(path, name, where + ": expected an object, found " + format::brief(t));
  for (auto f2 = t.begin(); f2 != t.end(); ++f2)
    if (f2.key() != "dtype" && f2.key() != "shape" && f2.key() != "data_offsets")
      fail(path, name, where + ": unknown field " + format::quoted(f2.key()));
  if (!t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
    fail(path, name, where + ": needs the fields dtype, shape and data_offsets");
  TensorInfo info;
  info.name = name;
  const auto& dt = t["dtype"];
  if (!dt.is_string()) fail(path, name, where + ": dtype: expected a string, found " + format::brief(dt));
  std::string d = dt.get<std::string>();
  if (d == "F32")
    info.dtype = DType::F32;
  else if (d == "F16")
    info.dtype = DType::F16;
  else if (d == "BF16")
    info.dtype = DType::BF16;
  else if (d == "F64")
    info.dtype = DType::F64;
  else
    fail(path, name,
         where + ": dtype " + format::quoted(d) + " is not supported (F32, F16, BF16 and F64 are)");

  const auto& sh = t["shape"];
  if (!sh.is_array()) fail(path, name, where + ": shape: expected an array, found " + format::brief(sh));
  uint64_t count = 1;
  bool overflow = false;
  for (const auto& dim : sh) {
    uint64_t n = get_u64(dim, path, where + ": shape");
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      overflow = true;
    else if (n != 0 && count > std::numeric_limits<uint64_t>::max() / n)
      overflow = true;
    else
      count *= n;
    info.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(n, std::numeric_limits<int64_t>::max())));
  }
  // A product past 2^64 can never match a byte range inside a real file.
  if (overflow || count > std::numeric_limits<uint64_t>::max() / item_size(info.dtype))
    fail(path, name, where + ": shape " + format::brief(sh) + " is too large");

  const auto& off = t["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail(path, name, where + ": data_offsets: expected [begin, end], found " + format::brief(off));
  info.begin = get_u64(off[0], path, where + ": data_offsets");
  info.end = get_u64(off[1], path, where + ": data_offsets");
  if (info.begin > info.end)
    fail(path, name, where + ": data_offsets " + format::brief(off) + " end before they begin");
  if (info.end > data_size)
    fail(path, name,
         where + ": data_offsets " + format::brief(off) + " run past the end of the data section (" +
             std::to_string(data_size) + " bytes; the file is truncated or the offsets are wrong)");
  uint64_t expected = count * item_size(info.dtype);
  if (info.end - info.begin != expected)
    fail(path, name,
         where + ": shape " + format::brief(sh) + " x " + dtype_name(info.dtype) + " needs " +
             std::to_string(expected) + " bytes, data_offsets " + format::brief(off) + " hold " +
             std::to_string(info.end - info.begin));
  return info;
}

// Ranges sorted by start must neither overlap nor leave holes (the safetensors spec forbids both;
// a hole is where a polyglot payload would hide).
void check_coverage(const std::string& path, const std::vector<TensorInfo>& tensors, uint64_t data_size) {
  std::vector<const TensorInfo*> by_begin;
  for (const auto& t : tensors) by_begin.push_back(&t);
  std::sort(by_begin.begin(), by_begin.end(),
            [](auto* a, auto* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  uint64_t covered = 0;
  const TensorInfo* prev = nullptr;
  for (const auto* t : by_begin) {
    if (t->begin == t->end) continue;  // empty tensors occupy no bytes
    if (t->begin < covered)
      fail(path, t->name,
           "tensor " + format::quoted(t->name) + " [" + std::to_string(t->begin) + ", " +
               std::to_string(t->end) + ") overlaps tensor " + format::quoted(prev->name) + " [" +
               std::to_string(prev->begin) + ", " + std::to_string(prev->end) + ")");
    if (t->begin > covered)
      fail(path, "data bytes [" + std::to_string(covered) + ", " + std::to_string(t->begin) +
                     ") belong to no tensor");
    covered = t->end;
    prev = t;
  }
  if (covered != data_size)
    fail(path, "data bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                   ") after the last tensor belong to no tensor");
}

}  // namespace

namespace {

// pread until `n` bytes are in `out` or the file ends; returns the count read.
uint64_t read_at(int fd, void* out, uint64_t n, uint64_t offset, const std::string& path) {
  auto* p = static_cast<unsigned char*>(out);
  uint64_t got = 0;
  while (got < n) {
    // Capped per call: Linux transfers at most 0x7ffff000 bytes per read anyway.
    size_t want = static_cast<size_t>(std::min<uint64_t>(n - got, uint64_t{1} << 30));
    ssize_t r = ::pread(fd, p + got, want, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(path, std::string("read error: ") + std::strerror(errno));
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  return got;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  // pread, not mmap: a mapped file truncated by another process while it is copied raises SIGBUS,
  // where a read just comes back short and becomes an error naming the file. Each tensor is read
  // straight into its destination, so there is no second full-size buffer (docs/model-format.md).
  int fd = format::open_regular(path);  // refuses a FIFO or directory before it is opened
  auto owned = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
  struct stat sb;
  if (::fstat(fd, &sb) != 0) fail(path, std::string("cannot stat: ") + std::strerror(errno));
  uint64_t file_size = static_cast<uint64_t>(sb.st_size);
  if (file_size < 8)
    fail(path, "file is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  unsigned char len[8];
  if (read_at(fd, len, 8, 0, path) != 8) fail(path, "file shrank while it was read: no 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len[i];
  if (header_len > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)");
  std::string header(header_len, '\0');
  if (read_at(fd, header.data(), header_len, 8, path) != header_len)
    fail(path, "file shrank while it was read: the header is cut short");

  nlohmann::json j = format::parse_json(header, path, "header");
  if (!j.is_object()) fail(path, "header: expected a JSON object, found " + format::brief(j));

  SafetensorsFile st;
  st.path_ = path;
  uint64_t data_size = file_size - 8 - header_len;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (!it->is_object())
        fail(path, "header: __metadata__: expected an object, found " + format::brief(*it));
      continue;
    }
    st.tensors_.push_back(parse_entry(path, name, *it, data_size));
  }

  check_coverage(path, st.tensors_, data_size);
  st.fd_ = std::move(owned);
  st.data_offset_ = 8 + header_len;
  st.data_size_ = data_size;
  return st;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

size_t SafetensorsFile::element_count(const TensorInfo& t) {
  return static_cast<size_t>((t.end - t.begin) / item_size(t.dtype));
}

std::vector<float> SafetensorsFile::read_f32(const TensorInfo& t) const {
  std::vector<float> out(element_count(t));
  read_f32(t, out.data());
  return out;
}

void SafetensorsFile::read_f32(const TensorInfo& t, float* out) const {
  read_f32(t, 0, element_count(t), out);
}

void SafetensorsFile::read_f32(const TensorInfo& t, size_t first, size_t count, float* out) const {
  // Offsets were checked in open(); a TensorInfo from another file would fail here, not read wild memory.
  if (t.end > data_size_ || t.begin > t.end || first > element_count(t) || count > element_count(t) - first)
    throw ModelError::about(path_, t.name, "tensor " + format::quoted(t.name) + " is not in this file");
  const uint64_t item = item_size(t.dtype);
  auto read = [&](void* dst, uint64_t n, uint64_t at) {
    if (read_at(*fd_, dst, n, data_offset_ + t.begin + item * first + at, path_) != n)
      throw ModelError::about(path_, t.name,
                              "tensor " + format::quoted(t.name) +
                                  ": the file shrank while it was read (is another process writing it?)");
  };
  if (t.dtype == DType::F32) {
    if (count) read(out, 4 * uint64_t(count), 0);
    return;
  }
  if (t.dtype == DType::F64) {  // rounded to nearest, a block at a time
    constexpr size_t kBlock64 = 8192;
    std::vector<double> block(std::min(kBlock64, count));
    for (size_t i = 0; i < count; i += kBlock64) {
      const size_t m = std::min(kBlock64, count - i);
      read(block.data(), 8 * m, 8 * i);
      for (size_t k = 0; k < m; ++k) out[i + k] = static_cast<float>(block[k]);
    }
    return;
  }
  // 16-bit dtypes: read a block, widen it into `out`. memcpy, not a cast: offsets need not be aligned.
  constexpr size_t kBlock = 32768;
  std::vector<uint16_t> block(std::min(kBlock, count));
  for (size_t i = 0; i < count; i += kBlock) {
    size_t m = std::min(kBlock, count - i);
    read(block.data(), 2 * m, 2 * i);
    for (size_t k = 0; k < m; ++k)
      out[i + k] = t.dtype == DType::F16 ? half_to_float(block[k])
                                         : std::bit_cast<float>(static_cast<uint32_t>(block[k]) << 16);
  }
}

void SafetensorsFile::read_f64(const TensorInfo& t, double* out) const {
  const size_t n = element_count(t);
  if (t.dtype != DType::F64) {
    std::vector<float> f(n);
    read_f32(t, f.data());
    std::copy(f.begin(), f.end(), out);
    return;
  }
  if (t.end > data_size_ || t.begin > t.end)
    throw ModelError::about(path_, t.name, "tensor " + format::quoted(t.name) + " is not in this file");
  const uint64_t bytes = t.end - t.begin;
  if (bytes && read_at(*fd_, out, bytes, data_offset_ + t.begin, path_) != bytes)
    throw ModelError::about(path_, t.name,
                            "tensor " + format::quoted(t.name) +
                                ": the file shrank while it was read (is another process writing it?)");
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto& t : tensors) {
    uint64_t count = 1;
    for (auto d : t.shape) {
      if (d < 0) throw UsageError("write_safetensors: tensor '" + t.name + "' has a negative dimension");
      count *= static_cast<uint64_t>(d);
    }
    if (count != t.values.size())
      throw UsageError("write_safetensors: tensor '" + t.name + "' has " + std::to_string(t.values.size()) +
                       " values for a shape of " + std::to_string(count));
    if (!names.insert(t.name).second)
      throw UsageError("write_safetensors: tensor '" + t.name + "' given twice");
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 4 * count}}};
    offset += 4 * count;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned, as the Python writer does
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw OutputError(path + ": cannot create: " + std::strerror(errno));
  unsigned char len[8];
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f) == 8 && std::fwrite(h.data(), 1, h.size(), f) == h.size();
  for (const auto& t : tensors)
    ok = ok && (t.values.empty() || std::fwrite(t.values.data(), 4, t.values.size(), f) == t.values.size());
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) throw OutputError(path + ": write failed");
}

}  // namespace lstmlm
