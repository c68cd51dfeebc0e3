// The lean path's attention (model/llamagen/lean_layer.h): every query of one (batch row, head)
// against that head's cache rows, softmax(q k^T + bias) v. AVX2+FMA loops (eight keys' scores per
// pass, a polynomial exp), on AVX-512 CPUs the same loops for three queries at a time (each key
// and value row read once for the three, from 32 registers), and portable ones; all pinned to the
// libtorch reference path by tests/model/test_lean_layer.cpp.
#pragma once
#include <cstdint>

namespace adtree::model {

// q rows `q_stride` floats apart against n_keys cache rows of K and V ([n_keys, hd] each), into
// out rows `out_stride` apart. bias is read at bias[i * bias_row_stride + j * bias_key_stride];
// scores holds n_keys. A query's output never depends on the key count, on where its visible keys
// sit among hidden ones or on how many queries the block has, bit for bit: every query runs the
// same arithmetic, alone or in a group. (Panel products for blocks of 8+ queries were faster for
// big trees, but summed in another order: a last-bit difference from AR's single query, which
// bf16 rounding turns into a 2^-9 one, and then a tree block and AR could commit different tokens.)
struct HeadBlock {
  const float *q, *K, *V, *bias;
  int64_t n_query, n_keys, hd, q_stride, out_stride, bias_row_stride, bias_key_stride;
  float *scores, *out;
};
void lean_attend(const HeadBlock& a);

}  // namespace adtree::model
