// Load time of weights.safetensors: one fread of the file into memory then a copy per tensor, an mmap of
// the file with the same per-tensor copy (the library's previous reader), and the library's pread of
// each tensor into its storage.
// The numbers in docs/model-format.md come from this program. Warm page cache (the file is read once
// before timing); each figure is the median of the repetitions.
//   g++ -O2 -std=c++20 -Iinclude bench/load_bench.cpp build/liblstmlm.a -o load_bench
//   ./load_bench DIR read|mmap|library|model [repetitions]
// One variant per process: freed buffers are reused by later allocations in the same process, so
// timing two variants in one process favours the second. "first" is the first repetition (fresh
// pages, what a CLI run pays); "median" is the median of the rest.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lstmlm/engine.hpp"
#include "lstmlm/model.hpp"
#include "lstmlm/safetensors.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// The whole file read into one buffer, then one copy per tensor (the loader's first version).
size_t read_variant(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  std::vector<unsigned char> file(static_cast<size_t>(std::ftell(f)));
  std::rewind(f);
  if (std::fread(file.data(), 1, file.size(), f) != file.size()) std::abort();
  std::fclose(f);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file[static_cast<size_t>(i)];
  auto st = lstmlm::SafetensorsFile::open(path);  // header offsets (data untouched)
  size_t bytes = 0;
  for (const auto& t : st.tensors()) {
    std::vector<float> v((t.end - t.begin) / 4);
    if (!v.empty()) std::memcpy(v.data(), file.data() + 8 + header_len + t.begin, v.size() * 4);
    bytes += v.size() * 4;
  }
  return bytes;
}

// The library: SafetensorsFile reads the header; read_f32 preads each tensor into its vector.
size_t library_variant(const std::string& path) {
  auto st = lstmlm::SafetensorsFile::open(path);
  size_t bytes = 0;
  for (const auto& t : st.tensors()) bytes += st.read_f32(t).size() * 4;
  return bytes;
}

// The file mapped, one copy per tensor out of the mapping (offsets from the validated header).
size_t mmap_variant(const std::string& path, const std::vector<lstmlm::TensorInfo>& tensors,
                    uint64_t header_len) {
  int fd = ::open(path.c_str(), O_RDONLY);
  struct stat s;
  ::fstat(fd, &s);
  void* p = ::mmap(nullptr, static_cast<size_t>(s.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const unsigned char* data = static_cast<const unsigned char*>(p) + 8 + header_len;
  size_t bytes = 0;
  for (const auto& t : tensors) {
    std::vector<float> v((t.end - t.begin) / 4);
    if (!v.empty()) std::memcpy(v.data(), data + t.begin, v.size() * 4);
    bytes += v.size() * 4;
  }
  ::munmap(p, static_cast<size_t>(s.st_size));
  ::close(fd);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: load_bench MODEL_DIR read|mmap|library|model [repetitions]\n");
    return 2;
  }
  std::string dir = argv[1], mode = argv[2], path = dir + "/weights.safetensors";
  int reps = argc > 3 ? std::atoi(argv[3]) : 10;
  std::vector<lstmlm::TensorInfo> tensors;
  uint64_t header_len = 0;
  if (mode == "mmap") {
    // Header offsets only (the data section is not read here); warm cache either way: see below.
    std::FILE* f = std::fopen(path.c_str(), "rb");
    unsigned char b[8];
    if (!f || std::fread(b, 1, 8, f) != 8) return 1;
    std::fclose(f);
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | b[i];
    tensors = lstmlm::SafetensorsFile::open(path).tensors();
  }
  std::vector<double> ms;
  size_t bytes = 0;
  for (int i = 0; i <= reps; ++i) {
    auto a = Clock::now();
    if (mode == "read")
      bytes = read_variant(path);
    else if (mode == "library")
      bytes = library_variant(path);
    else if (mode == "mmap")
      bytes = mmap_variant(path, tensors, header_len);
    else {
      // The load and the kernels' packing (made on first use since the engine owns the packed layout).
      auto m = lstmlm::Model::load(dir);
      bytes = m->memory_bytes() + lstmlm::packed_bytes(*m);
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  double first = ms[0];
  std::sort(ms.begin() + 1, ms.end());
  std::printf("{\"mode\":\"%s\",\"bytes\":%zu,\"first_ms\":%.1f,\"median_ms\":%.1f}\n", mode.c_str(), bytes,
              first, ms[1 + (ms.size() - 1) / 2]);
  return 0;
}
