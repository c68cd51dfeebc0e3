// Draft head training (`adtree train drafter`): EAGLE-1 on a frozen target, loss =
// SmoothL1(f_hat, f) + p_weight * soft-CE(target probs, draft log-probs), uniform noise on the
// input features; with cascade_weight > 1 the soft-CE rows are weighted by cascade_row_weights.
// Data: the target's teacher-forced features on the training pictures and, optionally, on the
// target's own CFG samples of training captions (self-distillation: the token distribution the head
// meets at inference), both in the cond and in the null-caption stream.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "train/config.h"

namespace adtree::train {

nlohmann::json drafter_default_config();

// CASCADE's drafter-training signal (docs/cascade.md): the weight of each row's soft
// cross-entropy, `weight` where the target's feature at that row has cosine > tau_h with the
// feature at some later row of the same sequence (a context the target comes back to), else 1.
// feats [B, L, dim] -> [B, L].
at::Tensor cascade_row_weights(const at::Tensor& feats, double tau_h, double weight);

// Trains a head for the GPT of `gpt_dir` (a finished `train gpt` run) and writes
// <out>/drafter.safetensors and run.json (and samples.safetensors when self-distilling).
TrainResult train_drafter(const io::Dataset& data, const std::string& gpt_dir,
                          const TrainOptions& opts);

// Draft accuracy (train/head_loss.h, evaluate_head) on `tokens` [n, N] with caption word ids
// [n, C].
nlohmann::json evaluate_drafter(const model::Gpt& target, const model::Drafter& head,
                                const at::Tensor& tokens, const at::Tensor& word_ids, double cfg,
                                int64_t batch = 16);

// Samples of the target with CFG: tokens [n, N] for caption word ids [n, C], seeded, batched.
at::Tensor sample_target(const model::Gpt& target, const at::Tensor& word_ids, double cfg,
                         double temperature, uint64_t seed, int64_t batch, std::ostream* log);
// The same for any condition (n rows of the conditional stream). Row i of the set is drawn from
// a generator seeded by (seed, first + i rounded down to its batch), so a set drawn in parts of
// whole batches, `first` counting the rows before, equals the set drawn at once.
at::Tensor sample_target(const model::Gpt& target, const model::Condition& cond, double cfg,
                         double temperature, uint64_t seed, int64_t batch, int64_t first,
                         std::ostream* log);

}  // namespace adtree::train
