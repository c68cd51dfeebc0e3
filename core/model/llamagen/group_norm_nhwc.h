// GroupNorm, with SiLU fused where the VQ decoder follows it with one, on channels-last
// activations (the picture decoder's layout, model/llamagen/vq_decoder.h): fp32 statistics over
// each group, then one pass that normalises, applies the affine weights and the SiLU. float or bf16
// activations; libtorch 1.13's own CPU group norm gives wrong results on channels-last bf16 input
// and is slow on NCHW bf16, and a separate SiLU costs another pass over the largest tensors of the
// decoder. The loops are vectorised for AVX-512 or AVX2, chosen at run time (plain C++ elsewhere).
#pragma once
#include <ATen/ATen.h>

namespace adtree::model {

// x [N, C, H, W] in channels-last memory, float or bf16, on the CPU; weight and bias [C] (any
// float dtype). Returns silu(group_norm(x)) (or group_norm(x) without `silu`) in x's dtype and
// layout. Throws adtree::Error on other layouts, dtypes or shapes.
at::Tensor group_norm_nhwc(const at::Tensor& x, int64_t groups, const at::Tensor& weight,
                           const at::Tensor& bias, double eps, bool silu);

// Which compiled loops run: 0 portable, 1 AVX2, 2 AVX-512, -1 the widest this CPU has (the
// default). Tests force each one the CPU can run, so all three are checked on one machine.
void force_group_norm_kernel(int kernel);

}  // namespace adtree::model
