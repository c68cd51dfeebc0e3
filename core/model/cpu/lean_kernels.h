// The loops of the lean inference path (model/llamagen/lean_layer.h), on fp32 rows: RoPE, attention
// of a block of queries over a head's cache rows, RMSNorm and the SwiGLU gate. Each has an AVX2+FMA
// version chosen at run time with the matrix kernel (packed_kernel(): $ADTREE_KERNEL=portable
// forces the portable loops too; eight keys' scores per pass, a polynomial exp) and a portable one;
// both are pinned to the libtorch reference path by tests/model/test_lean_layer.cpp.
#pragma once
#include <cstdint>

namespace adtree::model {

// Adjacent pairs (2j, 2j+1) of each of n_head heads times cis[j] = cos + i sin, in place.
void lean_rotate(float* v, const float* cis, int64_t n_head, int64_t hd);

// Every query of one (batch row, head): softmax(q k^T + bias) v for q rows `q_stride` floats
// apart against n_keys cache rows of K and V ([n_keys, hd] each), into out rows `out_stride`
// apart. bias is read at bias[i * bias_row_stride + j * bias_key_stride]; scores holds n_keys.
// A query's output never depends on the key count, on where its visible keys sit among hidden
// ones or on how many queries the block has, bit for bit: every query runs the same loops. (Panel
// products for blocks of 8+ queries were faster for big trees, but summed in another order: a
// last-bit difference from AR's single query, which bf16 rounding turns into a 2^-9 one, and
// then a tree block and AR could commit different tokens.)
struct HeadBlock {
  const float *q, *K, *V, *bias;
  int64_t n_query, n_keys, hd, q_stride, out_stride, bias_row_stride, bias_key_stride;
  float *scores, *out;
};
void lean_attend(const HeadBlock& a);

// y = RMSNorm(x) * weight row by row (x, y [rows, dim] fp32; may alias).
void lean_rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, double eps,
                   float* y);

// act [rows, hid] = silu(g1) * g3 for g [rows, 2 hid] = [g1 | g3] (the fused w1 | w3 product).
void lean_swiglu(const float* g, int64_t rows, int64_t hid, float* act);

}  // namespace adtree::model
