// A weight packed for the lean CPU path: panels of kPanelWidth output rows, k-major (fp32), or
// bf16 k-pairs (packed_bf16.h). The one type the packers (pack_rows.h), the products
// (packed_gemm.h, packed_bf16.h) and the packed-panel cache (pack_cache.h) share, so that none of
// them includes another for it.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

namespace adtree::model {

struct PackedWeight {
  // [ceil(n_out / 16), in, 16] fp32, or [ceil(n_out / 16), ceil(in / 2), 16, 2] bf16
  // (packed_bf16.h); zero rows past n_out
  at::Tensor panels;
  int64_t n_out = 0, in = 0;
  bool defined() const { return panels.defined(); }
  bool bf16() const { return defined() && panels.scalar_type() == at::kBFloat16; }
};

constexpr int64_t kPanelWidth = 16;

// fp32 -> bf16 bits, round to nearest even (NaN stays NaN), as c10::BFloat16 and vcvtneps2bf16.
inline uint16_t round_to_bf16(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace adtree::model
