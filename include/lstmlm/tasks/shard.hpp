// Splitting input files into N contiguous shards by bytes, on line boundaries, so that N processes (or Dask
// tasks) share a corpus without any of them reading the others' parts (`lstmlm score --shard K/N`,
// lstmlm.dask). As GNU split's `-n l/K/N`, with the files taken as one concatenated input:
//  - the input's S bytes (the sum of the files' sizes) are cut at floor(k * S / N), k = 1 .. N-1;
//  - a line belongs to the shard that holds its first byte, so a cut inside a line moves to the line's end;
//    a file's end is a line's end;
//  - shard K (1-based) is every line of the input whose first byte lies in [floor((K-1)S/N), floor(KS/N)),
//    in input order; the N shards together are the whole input, each line in exactly one of them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lstmlm::tasks {

struct Shard {
  uint32_t index = 1;  // 1-based
  uint32_t count = 1;
};

// The most shards an input is cut into.
inline constexpr uint32_t kMaxShards = 1000000;

// "K/N" with 1 <= K <= N <= kMaxShards. Throws UsageError (key "shard") naming the text.
Shard parse_shard(std::string_view text);

// Bytes [begin, end) of one file: begin is a line's first byte (or end).
struct FileRange {
  std::string path;
  size_t file = 0;  // its index in the paths given
  uint64_t begin = 0, end = 0;
};

// The non-empty ranges of `paths` that make shard `shard`, in input order. Every path must be a regular
// file ("-" and pipes cannot be cut by bytes: UsageError); one that cannot be opened or read is an
// InputError naming it. Reads at most the line around each cut.
std::vector<FileRange> shard_ranges(const std::vector<std::string>& paths, Shard shard);

// The number of "\n" bytes in [0, offset) of `path`: the line number of the line starting at `offset`
// is this + 1. Reads the file up to there (only a message naming a line in a later shard needs it).
uint64_t lines_before(const std::string& path, uint64_t offset);

}  // namespace lstmlm::tasks
