// The row-wise loops of the lean inference path (model/llamagen/lean_layer.h), on fp32 rows: RoPE,
// RMSNorm and the SwiGLU gate (attention: lean_attention.h). The gate has an AVX2+FMA version
// chosen at run time with the matrix kernel (packed_kernel(): $ADTREE_KERNEL=portable forces the
// portable loops too; a polynomial exp) and a portable one; both are pinned to the libtorch
// reference path by tests/model/test_lean_layer.cpp.
#pragma once
#include <cstdint>

namespace adtree::model {

// Adjacent pairs (2j, 2j+1) of each of n_head heads times cis[j] = cos + i sin, in place.
void lean_rotate(float* v, const float* cis, int64_t n_head, int64_t hd);

// y = RMSNorm(x) * weight row by row (x, y [rows, dim] fp32; may alias).
void lean_rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, double eps,
                   float* y);

// act [rows, hid] = silu(g1) * g3 for g [rows, 2 hid] = [g1 | g3] (the fused w1 | w3 product).
void lean_swiglu(const float* g, int64_t rows, int64_t hid, float* act);

}  // namespace adtree::model
