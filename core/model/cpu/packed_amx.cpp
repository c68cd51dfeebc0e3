#include "model/cpu/packed_amx.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cpuid.h>
#include <algorithm>
#include <cstring>

namespace adtree::model {

namespace {
constexpr long kReqXcompPerm = 0x1023;  // arch_prctl: ask for an extended state component
constexpr long kXtileData = 18;         // the AMX tile data component

bool cpu_has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (d >> 24 & 1u) && (d >> 22 & 1u);  // AMX-TILE and AMX-BF16
}

// The tiles: two accumulators (two panels of one 16-row block), the input rows and the two panels'
// k-steps of 16 pairs, and the same three for the last k-step where the pairs do not fill one. The
// intrinsics take a tile's number as a literal: 0-1 the accumulators, 2-4 a full k-step's
// operands, 5-7 the last one's. (Four accumulators with a reused operand tile were not faster by
// hand-run trials: the reuse waits for the product before it.)
struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loading a configuration zeroes the tiles and costs more than reading the current one, so it is
// loaded only where it differs: another library on this thread (oneDNN's AMX convolutions) may
// have loaded its own shapes or released the tiles since the last product.
__attribute__((target("amx-tile"))) void configure(int64_t tail_pairs) {
  TileConfig c;
  for (int t = 0; t < 5; ++t) c.colsb[t] = 64, c.rows[t] = 16;
  if (tail_pairs > 0) {
    c.colsb[5] = uint16_t(4 * tail_pairs), c.rows[5] = 16;
    for (int t = 6; t < 8; ++t) c.colsb[t] = 64, c.rows[t] = uint8_t(tail_pairs);
  }
  alignas(64) TileConfig now;
  _tile_storeconfig(&now);
  // GCC 12 does not see the tile instructions read or write the structs and drops their stores.
  asm volatile("" : : "r"(&c), "r"(&now) : "memory");
  if (std::memcmp(&now, &c, sizeof(c)) != 0) _tile_loadconfig(&c);
}

// One 16-row block of two panels into c[2][256] (or, where `direct`, into the output rows there,
// y_stride bytes apart): every k-step of 16 pairs, then the last partial one.
__attribute__((target("amx-tile,amx-bf16"))) void block(const uint32_t* x, int64_t xs,
                                                        const uint32_t* pa, const uint32_t* pb,
                                                        int64_t pairs, float (*c)[256],
                                                        float* direct, int64_t y_stride) {
  const int64_t full = pairs / 16 * 16;
  _tile_zero(0);
  _tile_zero(1);
  for (int64_t j = 0; j < full; j += 16) {
    _tile_loadd(2, x + j, xs);
    _tile_loadd(3, pa + j * 16, 64);
    _tile_loadd(4, pb + j * 16, 64);
    _tile_dpbf16ps(0, 2, 3);
    _tile_dpbf16ps(1, 2, 4);
  }
  if (full < pairs) {
    _tile_loadd(5, x + full, xs);
    _tile_loadd(6, pa + full * 16, 64);
    _tile_loadd(7, pb + full * 16, 64);
    _tile_dpbf16ps(0, 5, 6);
    _tile_dpbf16ps(1, 5, 7);
  }
  if (direct) {
    _tile_stored(0, direct, y_stride);
    _tile_stored(1, direct + 16, y_stride);
    return;
  }
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
}

// Rows [r0, r0 + n) of outputs [o0, o0 + n_valid) from the stored accumulators, plus the bias.
void store(const AmxArgs& a, const float (*c)[256], int64_t r0, int64_t n, int64_t o0,
           int64_t n_valid) {
  for (int64_t m = 0; m < n; ++m) {
    float* out = a.y + (r0 + m) * a.n_out + o0;
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t width = std::min<int64_t>(16, n_valid - 16 * half);
      const float* acc = c[half] + m * 16;
      const float* bias = a.bias ? a.bias + o0 + 16 * half : nullptr;
      for (int64_t o = 0; o < width; ++o) out[16 * half + o] = acc[o] + (bias ? bias[o] : 0.0f);
    }
  }
}
}  // namespace

bool amx_available() {
  static const bool ok =
      cpu_has_amx_bf16() && syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  return ok;
}

void panels_amx(const AmxArgs& a, int64_t p_begin, int64_t p_end) {
  const int64_t panel_words = a.pairs * 16;
  const int64_t xs = a.x_stride * 4;  // bytes between input rows
  configure(a.pairs % 16);
  alignas(64) float c[2][256];
  for (int64_t p = p_begin; p < p_end; p += 2) {
    // An odd last panel is paired with itself and its copy dropped.
    const uint32_t* pa = a.w + p * panel_words;
    const uint32_t* pb = p + 1 < p_end ? pa + panel_words : pa;
    const int64_t o0 = p * 16, n_valid = std::min<int64_t>(p + 1 < p_end ? 32 : 16, a.n_out - o0);
    for (int64_t r0 = 0; r0 < a.rows; r0 += 16) {
      const int64_t n = std::min<int64_t>(16, a.rows - r0);
      // A whole block of two panels, no bias: the tiles go straight to the output rows.
      float* direct = n == 16 && n_valid == 32 && !a.bias ? a.y + r0 * a.n_out + o0 : nullptr;
      block(a.xp + r0 * a.x_stride, xs, pa, pb, a.pairs, c, direct, a.n_out * 4);
      if (!direct) store(a, c, r0, n, o0, n_valid);
    }
  }
}

}  // namespace adtree::model
