// Packing weights into the lean path's panels (packed_gemm.h, packed_bf16.h) in one pass from the
// stored matrices: rows of several matrices stacked (w1 then w3 for the fused feed-forward) and a
// block of rows scaled (the attention scale folded into wqkv's q rows), with no intermediate copy.
// The panels are asked for in huge pages (madvise MADV_HUGEPAGE, where the kernel's transparent
// huge pages allow it): GPT-B's 423 MB of fp32 panels otherwise fault in 4 KiB at a time, and on a
// virtual machine where a fault costs ~10 us that was a third of the load (docs/PERFORMANCE.md).
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "model/cpu/packed_weight.h"

namespace adtree::model {

// Panels of the rows of `parts` stacked in order (each [rows_i, in], all fp32 or all bf16, on the
// CPU), rows [0, scaled_rows) multiplied by `scale` in fp32 (for bf16 parts, as a bf16 tensor's
// mul_ does: the scale rounded to bf16, the product to nearest even). fp32 parts give fp32 panels,
// bf16 parts bf16 panels; an empty PackedWeight for other dtypes, devices or mismatched widths.
PackedWeight pack_rows(const std::vector<at::Tensor>& parts, int64_t scaled_rows = 0,
                       float scale = 1.0f);

// Packs an fp32 CPU weight [n_out, in]; an empty PackedWeight for anything else (other dtypes
// and devices keep the libtorch path).
PackedWeight pack_weight(const at::Tensor& w);
// What inference packs: fp32 panels for an fp32 weight, bf16 panels (packed_bf16.h) for a bf16
// one, nothing for other dtypes and devices.
PackedWeight pack_inference_weight(const at::Tensor& w);

// Packs a CPU weight [n_out, in] (fp32, rounded to nearest even, or bf16) into bf16 panels; an
// empty PackedWeight for other dtypes and devices.
PackedWeight pack_weight_bf16(const at::Tensor& w);

}  // namespace adtree::model
