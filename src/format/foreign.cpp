// Sniffing of other frameworks' model files: magic bytes first, then a zip's entry names, then the
// names TensorFlow gives its files. Only regular files are opened (a FIFO must not block).
#include "format/foreign.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

namespace lstmlm::format {

namespace {

namespace fs = std::filesystem;

// A zip's central directory larger than this is not read (a real one of a model is a few KB).
constexpr uint64_t kMaxCentralDirectory = 16ull << 20;

class File {
 public:
  explicit File(const std::string& path) {
    struct stat sb;
    if (::stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ >= 0 && (::fstat(fd_, &sb) != 0 || !S_ISREG(sb.st_mode))) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) size_ = static_cast<uint64_t>(sb.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  bool ok() const { return fd_ >= 0; }
  uint64_t size() const { return size_; }
  // Up to `n` bytes at `offset` (fewer at the end of the file or on an error).
  std::string read(uint64_t offset, size_t n) const {
    std::string s(n, '\0');
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, s.data() + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    s.resize(got);
    return s;
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

uint64_t le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
  return v;
}

// The entry names of a zip file, from its central directory (zip64 included); empty when unreadable.
std::vector<std::string> zip_names(const File& f) {
  const size_t tail_len = static_cast<size_t>(std::min<uint64_t>(f.size(), 22 + 65535));
  const uint64_t tail_at = f.size() - tail_len;
  std::string tail = f.read(tail_at, tail_len);
  if (tail.size() < 22) return {};
  size_t eocd = std::string::npos;
  for (size_t i = tail.size() - 22 + 1; i-- > 0;)
    if (tail.compare(i, 4, "PK\x05\x06") == 0) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) return {};
  uint64_t cd_size = le(tail, eocd + 12, 4), cd_at = le(tail, eocd + 16, 4);
  if ((cd_size == 0xffffffffu || cd_at == 0xffffffffu) && eocd >= 20 &&
      tail.compare(eocd - 20, 4, "PK\x06\x07") == 0) {
    std::string z = f.read(le(tail, eocd - 20 + 8, 8), 56);  // the zip64 end of central directory record
    if (z.size() < 56 || z.compare(0, 4, "PK\x06\x06") != 0) return {};
    cd_size = le(z, 40, 8);
    cd_at = le(z, 48, 8);
  }
  if (cd_size > kMaxCentralDirectory || cd_at > f.size() || cd_size > f.size() - cd_at) return {};
  std::string cd = f.read(cd_at, static_cast<size_t>(cd_size));
  std::vector<std::string> names;
  for (size_t p = 0; p + 46 <= cd.size() && cd.compare(p, 4, "PK\x01\x02") == 0;) {
    size_t n = le(cd, p + 28, 2), extra = le(cd, p + 30, 2), comment = le(cd, p + 32, 2);
    if (p + 46 + n > cd.size()) break;
    names.push_back(cd.substr(p + 46, n));
    p += 46 + n + extra + comment;
  }
  return names;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// NAME.data-DDDDD-of-DDDDD, a TF1 checkpoint's data shard (a hand matcher: std::regex trips GCC 12's
// -Wmaybe-uninitialized in the sanitizer build).
bool is_tf1_data_shard(const std::string& name) {
  auto digits = [&](size_t& i) {
    const size_t start = i;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
    return i > start;
  };
  for (size_t at = name.find(".data-"); at != std::string::npos; at = name.find(".data-", at + 1)) {
    size_t i = at + 6;
    if (!digits(i) || name.compare(i, 4, "-of-") != 0) continue;
    i += 4;
    if (digits(i) && i == name.size()) return true;
  }
  return false;
}

ForeignModel convertible(std::string what, std::string format) {
  return {std::move(what), std::move(format), true};
}

std::optional<ForeignModel> identify_file(const std::string& path) {
  File f(path);
  if (!f.ok()) return std::nullopt;
  const std::string head = f.read(0, 4096);
  const std::string name = fs::path(path).filename().string();
  if (head.compare(0, 8, "\x89HDF\r\n\x1a\n") == 0) return convertible("a Keras HDF5 file", "Keras HDF5");
  if (head.compare(0, 4, "PK\x03\x04") == 0 || head.compare(0, 4, "PK\x05\x06") == 0) {
    auto names = zip_names(f);
    auto has = [&](auto pred) { return std::any_of(names.begin(), names.end(), pred); };
    if (has([](const std::string& n) { return n == "config.json"; }) &&
        has([](const std::string& n) { return n == "model.weights.h5"; }))
      return convertible("a Keras .keras file", "Keras");
    if (has([](const std::string& n) { return n == "data.pkl" || ends_with(n, "/data.pkl"); }))
      return convertible("a PyTorch checkpoint (.pt/.pth)", "PyTorch");
  }
  // A pickle (protocol 2 and later start with PROTO): torch.save's legacy format.
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5)
    return convertible("a PyTorch pickle file (.pt/.pth)", "PyTorch");
  if (ends_with(name, ".index") || ends_with(name, ".meta") || is_tf1_data_shard(name))
    return convertible("a TensorFlow 1 checkpoint file", "TF1 checkpoint");
  if (ends_with(name, ".onnx")) return convertible("an ONNX file", "ONNX");
  if (name == "saved_model.pb") return convertible("a TensorFlow SavedModel file", "TensorFlow SavedModel");
  if (name == "model.json" || (head.find("\"modelTopology\"") != std::string::npos ||
                               head.find("\"weightsManifest\"") != std::string::npos))
    return convertible("a TensorFlow.js model (model.json)", "TensorFlow.js");
  return std::nullopt;
}

std::optional<ForeignModel> identify_directory(const fs::path& dir) {
  std::error_code ec;
  auto is_file = [&](const char* n) { return fs::is_regular_file(dir / n, ec); };
  if (is_file("config.json")) return std::nullopt;  // an lstmlm directory, however broken
  if (is_file("saved_model.pb") || is_file("saved_model.pbtxt"))
    return convertible("a TensorFlow SavedModel directory", "TensorFlow SavedModel");
  if (is_file("checkpoint")) return convertible("a TensorFlow 1 checkpoint directory", "TF1 checkpoint");
  if (is_file("model.json")) return convertible("a TensorFlow.js model directory", "TensorFlow.js");
  // ml5's (deeplearn.js') char-rnn dump: manifest.json naming one raw float32 file per variable.
  if (is_file("manifest.json") && is_file("vocab.json"))
    return convertible("an ml5 char-rnn directory (manifest.json and raw weight files)", "ml5");
  return std::nullopt;
}

}  // namespace

std::optional<ForeignModel> identify_foreign_model(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) return identify_directory(path);
  if (fs::is_regular_file(st)) return identify_file(path);
  // A TF1 checkpoint is often named by its prefix, which is no file itself.
  if (!fs::exists(st) && fs::is_regular_file(path + ".index", ec))
    return convertible("a TensorFlow 1 checkpoint prefix", "TF1 checkpoint");
  return std::nullopt;
}

}  // namespace lstmlm::format
