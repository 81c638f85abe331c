// AMX tile configuration shared by the bf16 and int8 AMX kernels (compiled with -mamx-tile). Every tile
// here is 16 rows of 64 bytes: C tiles of 16 x 16 fp32 or int32, A tiles of 16 rows of inputs, B tiles
// of 16 input groups (pairs or quads) x 16 columns.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace lstmlm::kernels {

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3 accumulate, 4-5 hold inputs, 6-7 weights; all 16 x 64 bytes. The configuration is the
// thread's; the kernel releases it when done, so a thread that runs no AMX carries no tile state.
struct TileSession {
  TileSession() {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.rows[t] = 16;
      c.colsb[t] = 64;
    }
    _tile_loadconfig(&c);
  }
  ~TileSession() { _tile_release(); }
  TileSession(const TileSession&) = delete;
  TileSession& operator=(const TileSession&) = delete;
};

}  // namespace

}  // namespace lstmlm::kernels
