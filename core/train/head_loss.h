// What both draft-head trainers share (the dataset one, drafter_trainer.h, and the one on a model
// directory's own samples, head_on_model.h): the target's rows the head learns from, under
// teacher forcing, and the loss trained for what is verified (head_unroll.h).
#pragma once
#include <ATen/ATen.h>

#include <nlohmann/json_fwd.hpp>

#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/parallel_head.h"

namespace adtree::train {

// Target features and logits for the head's rows j = 0 .. N-2 (token z_j with the feature f_j
// that preceded it; targets f_{j+1} and the logits of z_{j+1}).
struct TargetRows {
  at::Tensor feats_in, tokens_in, feats_next, logits_next;
};
// `tokens` [B, N] under `cond` (B rows, either stream), without gradients.
TargetRows target_rows(const model::Gpt& target, const at::Tensor& tokens,
                       const model::Condition& cond);

// Row j holds token z_j at its own sequence position (the 2-D RoPE cell of z_j): [n] int64.
at::Tensor head_positions(const model::Gpt& target, int64_t n);

// Classifier-free guidance on logits: u + s (c - u).
at::Tensor cfg_mix(const at::Tensor& c, const at::Tensor& u, double s);

// The loss of the recipe trained for what is verified on rows of `tr` that hold each picture twice,
// cond stream first: per unrolled pass p (rows j >= p, which have p predicted ancestors), the
// feature regression, cfg.p_weight x the per-stream soft cross-entropy and cfg.mix_weight x the
// KL of the CFG-mixed distributions (cfg.mix_cfg, cfg.mix_temperature; cfg.tt_passes passes).
at::Tensor paired_loss(const model::Drafter& head, const TargetRows& tr, const at::Tensor& feats,
                       const at::Tensor& pos, const nlohmann::json& cfg);

// The loss of a head that predicts the guided distribution from the conditional stream alone
// (model.json's drafter.output "mixed"): `tr` holds each picture twice, cond stream first, and the
// head runs on the cond rows' features `feats` [B, N - 1, D]; per unrolled pass, the feature
// regression, cfg.mix_weight x KL(p || q) of the target's CFG-mixed distribution and the head's
// own at cfg.mix_temperature, and cfg.p_weight x the cross-entropy at temperature 1.
at::Tensor mixed_stream_loss(const model::Drafter& head, const TargetRows& tr,
                             const at::Tensor& feats, const at::Tensor& pos,
                             const nlohmann::json& cfg);

// Draft accuracy under teacher forcing on `tokens` [n, N] under `cond` (n rows, the conditional
// stream): top-1 and top-3 (the target's argmax among the head's 1 / 3 best) in the cond stream
// and on CFG-mixed logits (scale `cfg`), and accept_t1 = mean sum_x min(p, q) of the CFG-mixed
// distributions at temperature 1 (the chance that one sampled draft token is accepted).
// `mixed_output`: the head's cond-stream logits are its guided distribution (no mixing).
nlohmann::json evaluate_head(const model::Gpt& target, const model::Drafter& head,
                             const at::Tensor& tokens, const model::Condition& cond, double cfg,
                             int64_t batch = 16, bool mixed_output = false);

// The parallel head's inputs over a batch of pictures: for row j (root z_j) and depth d, the code
// above cell j + d, -1 where there is none (the top row) or the cell is past the image.
// tokens [B, N] -> [B, N - 1, K].
at::Tensor codes_above(const at::Tensor& tokens, int64_t grid_w, int64_t depths);

// The parallel head's loss on rows of `tr` that hold each picture twice, cond stream first: at
// every depth d, KL(p || q) of the target's CFG-mixed distribution of cell j + d (cfg.mix_cfg,
// scaled by cfg.mix_temperature) and the head's distribution from the cond stream's feature
// `feats` [B, N - 1, D] of row j; the mean over the rows that have cell j + d, summed over depths.
at::Tensor parallel_loss(const model::ParallelHead& head, const TargetRows& tr,
                         const at::Tensor& tokens, const at::Tensor& feats,
                         const nlohmann::json& cfg);

// The parallel head's draft accuracy per depth (evaluate_head's measures of depth 1, plus
// accept_by_depth and cfg_top1_by_depth) on `tokens` [n, N] under `cond` (the cond stream).
nlohmann::json evaluate_parallel_head(const model::Gpt& target, const model::ParallelHead& head,
                                      const at::Tensor& tokens, const model::Condition& cond,
                                      double cfg, int64_t batch = 8);

}  // namespace adtree::train
