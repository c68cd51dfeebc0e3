// 2-D rotary position embedding of LlamaGen (LLAMAGEN.md "2-D RoPE").
// Pairs are ADJACENT elements (2j, 2j+1); the first head_dim/4 pairs rotate by the grid row, the
// rest by the column. Condition positions have cos = sin = 0, so their q and k become zero vectors.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

namespace adtree::model {

class Rope2d {
 public:
  // Table for sequence positions 0 .. cond_tokens + grid*grid - 1 (position C + n = image token n).
  Rope2d(int64_t head_dim, int64_t cond_tokens, int64_t grid, double base);

  // cos and sin tables [seq_len, head_dim / 2], fp32.
  const at::Tensor& cos() const { return cos_; }
  const at::Tensor& sin() const { return sin_; }
  // The same rotation as complex numbers cos + i sin [seq_len, head_dim / 2] (complex64): the fast
  // path rotates q and k of a block together with one complex multiply.
  const at::Tensor& cis() const { return cis_; }
  int64_t seq_len() const { return cos_.size(0); }

  // Rotates x [B, q, H, head_dim] whose tokens sit at sequence positions `pos` (int64 [q]).
  // Computed in fp32 and cast back to x's dtype.
  at::Tensor apply(const at::Tensor& x, const at::Tensor& pos) const;
  // Same with pre-gathered tables (cos/sin [q, head_dim/2]), to share one gather between q and k.
  static at::Tensor apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

  Rope2d to(const at::Device& device) const;

 private:
  Rope2d() = default;
  at::Tensor cos_, sin_, cis_;
};

}  // namespace adtree::model
