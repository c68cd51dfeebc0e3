// The PJD loop (Parallel Jacobi Decoding, SPEC_DECODING.md section 6.4): one target forward per
// step over the active rows' anchors and drafts (pjd_state.h) under the row-causal mask, with the
// committed cells kept as scratch K/V rows that each query sees or not by raster order. Rows commit
// out of raster order, which the tree loop (spec_decoder.h) cannot express: its steps commit one
// raster run after the root. Lossy unless max_rows = 1.
#pragma once
#include <atomic>

#include "decode/ar_sampler.h"
#include "decode/settings/method.h"
#include "model/conditioning.h"
#include "model/llamagen/gpt.h"

namespace adtree::decode {

// `cond` as for generate_ar; request.method.method must be Method::Pjd.
DecodeResult generate_pjd(const model::Gpt& target, const model::Condition& cond,
                          const DecodeRequest& request, const StepCallback& on_step = {},
                          const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::decode
